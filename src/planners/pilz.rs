//! The motions of MoveIt's Pilz industrial motion planner that are planned here, as industrial
//! robot programs know them: `PTP` (point to point) and `LIN` (linear). Neither searches: the
//! motion is made as asked or refused ([`PlanError::Blocked`]) when it collides or cannot be
//! followed, so a cell programmer gets exactly the motion named.
//!
//! - **PTP** ([`ptp`]): the straight joint-space motion from start to goal, checked in one
//!   batched call, timed with every joint on one synchronised profile (the stop-at-waypoints
//!   timing of a two-waypoint path under the joint velocity, acceleration and jerk limits).
//! - **LIN** ([`lin`]): the goal link moved along the straight line from its start pose to its
//!   goal pose, its orientation interpolated on the shorter arc: a Cartesian path with one
//!   waypoint ([`super::cartesian::plan_cartesian`]), refused unless it reaches the end. A joint
//!   goal is reached through its pose and must then be the configuration the line ends in.
//!   Its timing keeps the robot's Pilz limits (`pilz_cartesian_limits.yaml`: speed, angular
//!   speed and acceleration of the link, scaled) where the robot has them; the planning
//!   service and `gmp plan` apply them ([`crate::trajectory::LinkLimit::for_cartesian_path`]).
//!
//! `CIRC` is not planned: MoveIt passes its centre or interim point as a path constraint.

use nalgebra::Isometry3;

use super::cartesian::{plan_cartesian, CartesianOptions, CartesianPath};
use std::time::Instant;

use super::{Context, PlanError, PlanResult, PlanStats, PlannerId, RawSolution};
use crate::collision::{Checker, MotionBatch};
use crate::robot::ik::{IkSolver, PoseTarget};
use crate::robot::{KinematicTree, PlanningGroup};
use crate::trajectory::{self, PathTiming};

/// Largest joint difference (rad or m) between a LIN motion's end and a joint goal.
pub const LIN_GOAL_TOLERANCE: f64 = 1e-3;

/// Where a LIN motion goes.
pub struct LinTarget<'g> {
    /// The link moved.
    pub link: usize,
    /// Its goal pose in the planning frame.
    pub pose: Isometry3<f64>,
    /// The joint goal the line must end in, if the goal was one.
    pub goal: Option<&'g [f64]>,
}

/// The link, target pose and joint goal of a LIN motion from `start` (group configuration; the
/// other joints at `base`): a pose goal's link and pose (a position goal keeps the start's
/// orientation), else `tip`'s pose at the joint `goal`, which the line must then end in.
pub fn lin_target<'g>(
    (tree, group, base): (&KinematicTree, &PlanningGroup, &[f64]),
    (start, goal): (&[f64], &'g [f64]),
    pose: Option<&PoseTarget>,
    tip: Option<usize>,
) -> Result<LinTarget<'g>, String> {
    let pose_at =
        |q: &[f64], link: usize| tree.forward_kinematics(&group.full_state(base, q))[link];
    match pose {
        Some(t) => {
            let mut pose = t.pose;
            if t.orientation_tolerance.is_none() {
                pose.rotation = pose_at(start, t.link).rotation;
            }
            Ok(LinTarget {
                link: t.link,
                pose,
                goal: None,
            })
        }
        None => {
            let link = tip.ok_or_else(|| {
                format!(
                    "LIN: group '{}' has no tip link to move; give a pose goal",
                    group.name
                )
            })?;
            Ok(LinTarget {
                link,
                pose: pose_at(goal, link),
                goal: Some(goal),
            })
        }
    }
}

/// How the path of a LIN motion is timed: through its configurations.
fn timing(opts: &CartesianOptions) -> PathTiming {
    PathTiming::Through {
        vel_scale: opts.vel_scale,
        acc_scale: opts.acc_scale,
    }
}

/// PTP: the straight joint-space motion from the request's start to its goal, or
/// [`PlanError::Blocked`] when it collides.
pub(crate) fn ptp(ctx: &mut Context<'_, '_>) -> Result<RawSolution, PlanError> {
    let (start, goal) = (&ctx.req.start, &ctx.req.goal);
    let mut motion = MotionBatch::new(ctx.space.dof());
    motion.push(start, goal)?;
    let free = ctx.checker.check_motions(&motion, ctx.req.resolution)?;
    if free.first() != Some(&true) {
        return Err(PlanError::Blocked {
            planner: PlannerId::Ptp,
            reason: "the straight joint motion from start to goal collides (PTP plans no \
                     detour; a sampling planner such as rrt_connect does)"
                .into(),
        });
    }
    Ok(RawSolution {
        path: vec![start.clone(), goal.clone()],
        iterations: 1,
        vertices: 2,
        edges: 1,
        cost_over_time: Vec::new(),
    })
}

/// LIN: `solver`'s link moved along a straight line from where `start` puts it to `target`
/// (see the module documentation); `goal`: a joint goal the line must end in. The result's
/// path is the line's configurations, timed through them. Errors: [`PlanError::Blocked`]
/// naming why the line cannot be made.
pub fn lin(
    checker: &dyn Checker,
    solver: &mut IkSolver,
    start: &[f64],
    (target, goal): (&Isometry3<f64>, Option<&[f64]>),
    opts: &CartesianOptions,
) -> Result<PlanResult, PlanError> {
    let started = Instant::now();
    let out = line(checker, solver, start, (target, goal), opts)?;
    let length = trajectory::path_length(checker.space(), &out.path);
    let stats = PlanStats {
        planning_time: started.elapsed(),
        collision_checks: out.stats.collision_checks,
        motions_checked: out.path.len().saturating_sub(1) as u64,
        motion_batches: 1,
        path_length_before: length,
        path_length_after: length,
        iterations: 1,
        ..PlanStats::default()
    };
    Ok(PlanResult {
        planner: PlannerId::Lin,
        raw_path: out.path.clone(),
        path: out.path,
        trajectory: out.trajectory,
        timing: timing(opts),
        stats,
    })
}

/// The Cartesian path of [`lin`].
fn line(
    checker: &dyn Checker,
    solver: &mut IkSolver,
    start: &[f64],
    (target, goal): (&Isometry3<f64>, Option<&[f64]>),
    opts: &CartesianOptions,
) -> Result<CartesianPath, PlanError> {
    let blocked = |reason: String| PlanError::Blocked {
        planner: PlannerId::Lin,
        reason,
    };
    let out = plan_cartesian(checker, solver, start, std::slice::from_ref(target), opts)?;
    if out.fraction < 1.0 {
        let why = out
            .stop
            .as_ref()
            .map_or(String::new(), |s| format!(": {s}"));
        return Err(blocked(format!(
            "the straight line stops at {:.1} % of the way{why} (LIN plans no detour)",
            100.0 * out.fraction
        )));
    }
    let mut out = out;
    if let (Some(goal), Some(end)) = (goal, out.path.last()) {
        let mut delta = vec![0.0; goal.len()];
        checker.space().difference(end, goal, &mut delta);
        let widest = delta.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        if widest > LIN_GOAL_TOLERANCE {
            return Err(blocked(format!(
                "the straight line reaches the goal's pose in another joint configuration \
                 (joints up to {widest:.4} apart); give the goal as a pose, or plan with PTP"
            )));
        }
        // The line ends exactly in the goal (the last step's end moves by the inverse
        // kinematics' residual): timed and checked again.
        if let Some(last) = out.path.last_mut() {
            last.copy_from_slice(goal);
        }
        out.trajectory = timing(opts).time(checker.space(), &out.path, None)?;
        trajectory::validate_along(checker, &out.path, &out.trajectory, opts.resolution)
            .map_err(PlanError::ValidationFailed)?;
    }
    Ok(out)
}
