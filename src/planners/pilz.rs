//! The motions of MoveIt's Pilz industrial motion planner that are planned here, as industrial
//! robot programs know them: `PTP` (point to point), `LIN` (linear) and `CIRC` (circular).
//! None searches: the motion is made as asked or refused ([`PlanError::Blocked`]) when it
//! collides or cannot be followed, so a cell programmer gets exactly the motion named.
//!
//! - **PTP** ([`super::plan`] with [`PlannerId::Ptp`]): the straight joint-space motion from
//!   start to goal, checked in one batched call, timed with every joint on one synchronised
//!   profile (the stop-at-waypoints timing of a two-waypoint path under the joint velocity,
//!   acceleration and jerk limits).
//! - **LIN** ([`cartesian_motion`] with [`PilzPath::Lin`]): the goal link moved along the
//!   straight line from its start pose to its goal pose, its orientation interpolated on the
//!   shorter arc: a Cartesian path with one waypoint ([`super::cartesian::plan_cartesian`]),
//!   refused unless it reaches the end. A joint goal is reached through its pose and must then
//!   be the configuration the line ends in ([`LIN_GOAL_TOLERANCE`]; it then ends exactly in
//!   it).
//!   Its timing keeps the robot's Pilz limits (`pilz_cartesian_limits.yaml`: speed, angular
//!   speed and acceleration of the link, scaled) where the robot has them; the planning
//!   service and `gmp plan` apply them ([`crate::trajectory::LinkLimit::for_cartesian_path`]).
//!
//! - **CIRC** ([`cartesian_motion`] with [`PilzPath::Circ`]): the goal link moved along an
//!   arc of the circle through its start and goal positions that a centre or an interim point
//!   fixes ([`CircPoint`]; MoveIt passes it as the position of a path constraint named `center`
//!   or `interim`), the orientation interpolated as for LIN: a Cartesian path through poses on
//!   the arc at most `max_step` apart ([`arc_poses`]), refused as LIN is.

use std::time::Instant;

use nalgebra::{Isometry3, Vector3};

use super::cartesian::{plan_cartesian, CartesianOptions, CartesianPath};
use super::{Context, PlanError, PlanResult, PlanStats, PlannerId, RawSolution};
use crate::collision::{Checker, MotionBatch};
use crate::robot::ik::{IkSolver, PoseTarget};
use crate::robot::{KinematicTree, PlanningGroup};
use crate::trajectory::{self, PathTiming};

/// Largest joint difference (rad or m) between a LIN or CIRC motion's end and a joint goal.
pub const LIN_GOAL_TOLERANCE: f64 = 1e-3;

/// Where a LIN or CIRC motion goes.
pub struct LinTarget<'g> {
    /// The link moved.
    pub link: usize,
    /// Its goal pose in the planning frame.
    pub pose: Isometry3<f64>,
    /// The joint goal the line must end in, if the goal was one.
    pub goal: Option<&'g [f64]>,
}

/// The link, target pose and joint goal of a LIN or CIRC motion from `start` (group
/// configuration; the other joints at `base`): a pose goal's link and pose (a position goal
/// keeps the start's orientation), else `tip`'s pose at the joint `goal`, which the motion
/// must then end in.
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
                    "group '{}' has no tip link to move along a line or an arc; give a pose goal",
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

/// The Cartesian path options of a LIN or CIRC motion for `req`: its motion check step and
/// scalings, the default steps along the path.
pub fn options(req: &super::PlanRequest) -> CartesianOptions {
    CartesianOptions {
        resolution: req.resolution,
        vel_scale: req.vel_scale,
        acc_scale: req.acc_scale,
        ..CartesianOptions::default()
    }
}

/// How the path of a LIN or CIRC motion is timed: through its configurations.
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

/// The point that fixes the circle of a CIRC motion, in the planning frame (MoveIt passes it
/// as the position of a path constraint named `center` or `interim`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CircPoint {
    /// The circle's centre: the arc goes the shorter way round it, so start and goal must be
    /// as far from it (within [`CIRC_RADIUS_TOLERANCE`]) and not opposite each other.
    Center(Vector3<f64>),
    /// A point the arc passes through between start and goal.
    Interim(Vector3<f64>),
}

/// Largest difference (m) between the start's and the goal's distances from a CIRC centre.
pub const CIRC_RADIUS_TOLERANCE: f64 = 1e-3;

/// Where a Cartesian motion of Pilz goes: LIN a straight line, CIRC an arc.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PilzPath {
    /// A straight line to the target.
    Lin,
    /// An arc of a circle to the target.
    Circ(CircPoint),
}

impl PilzPath {
    fn planner(&self) -> PlannerId {
        match self {
            PilzPath::Lin => PlannerId::Lin,
            PilzPath::Circ(_) => PlannerId::Circ,
        }
    }

    fn what(&self) -> &'static str {
        match self {
            PilzPath::Lin => "the straight line",
            PilzPath::Circ(_) => "the arc",
        }
    }
}

/// The poses of an arc from `from` to `to` on the circle `aux` fixes, at most `max_step` (m)
/// apart along it (`to` last; `from` not included), the orientation turned on the shorter
/// arc in proportion to the angle swept. Errors say why the circle is not defined.
pub fn arc_poses(
    from: &Isometry3<f64>,
    to: &Isometry3<f64>,
    aux: &CircPoint,
    max_step: f64,
) -> Result<Vec<Isometry3<f64>>, String> {
    let (p0, p1) = (from.translation.vector, to.translation.vector);
    // The circle: centre, radius, the unit vectors u (towards the start) and v in its plane,
    // and the angle swept from the start to the goal.
    let (center, sweep, v) = match *aux {
        CircPoint::Center(c) => {
            let (a, b) = (p0 - c, p1 - c);
            let (ra, rb) = (a.norm(), b.norm());
            if (ra - rb).abs() > CIRC_RADIUS_TOLERANCE {
                return Err(format!(
                    "the start and the goal are {ra:.4} m and {rb:.4} m from the centre: a \
                     circle needs them as far (within {CIRC_RADIUS_TOLERANCE} m)"
                ));
            }
            let normal = a.cross(&b);
            if ra < 1e-9 || normal.norm() < 1e-9 * ra * rb {
                return Err(
                    "the start, the centre and the goal are on one line: the circle's \
                            plane is not defined (give an interim point)"
                        .into(),
                );
            }
            let v = normal.cross(&a).normalize();
            (c, a.angle(&b), v)
        }
        CircPoint::Interim(m) => {
            // The circumcentre of start, interim and goal.
            let (a, b) = (p0 - m, p1 - m);
            let normal = a.cross(&b);
            let n2 = normal.norm_squared();
            if n2 < 1e-18 {
                return Err(
                    "the start, the interim point and the goal are on one line (or two \
                            of them coincide): no circle passes through them"
                        .into(),
                );
            }
            let c = m + (b * a.norm_squared() - a * b.norm_squared()).cross(&normal) / (2.0 * n2);
            let (ua, ub, um) = (p0 - c, p1 - c, m - c);
            let v = normal.cross(&ua).normalize();
            // Angles from the start in the direction of v: the interim lies between.
            let angle_of = |w: &Vector3<f64>| {
                let x = w.dot(&ua.normalize());
                let y = w.dot(&v);
                let t = y.atan2(x);
                if t < 0.0 {
                    t + std::f64::consts::TAU
                } else {
                    t
                }
            };
            let (tm, tg) = (angle_of(&um), angle_of(&ub));
            // v points from the start towards the interim when the interim comes first that
            // way; otherwise go the other way round.
            if tm <= tg {
                (c, tg, v)
            } else {
                (c, std::f64::consts::TAU - tg, -v)
            }
        }
    };
    let u = p0 - center;
    let radius = u.norm();
    let v = v * radius;
    let steps = ((radius * sweep / max_step).ceil() as usize).max(1);
    Ok((1..=steps)
        .map(|k| {
            let f = k as f64 / steps as f64;
            if k == steps {
                return *to;
            }
            let t = sweep * f;
            let position = center + u * t.cos() + v * t.sin();
            let mut pose = super::cartesian::interpolate_pose(from, to, f);
            pose.translation.vector = position;
            pose
        })
        .collect())
}

/// LIN or CIRC: `solver`'s link moved from where `start` puts it to `target` along a straight
/// line or an arc (see the module documentation); `goal`: a joint goal the motion must end
/// in. The result's path is the motion's configurations, timed through them. Errors:
/// [`PlanError::Blocked`] naming why the motion cannot be made.
pub fn cartesian_motion(
    checker: &dyn Checker,
    solver: &mut IkSolver,
    start: &[f64],
    (target, goal, kind): (&Isometry3<f64>, Option<&[f64]>, PilzPath),
    opts: &CartesianOptions,
) -> Result<PlanResult, PlanError> {
    let started = Instant::now();
    let out = motion(checker, solver, start, (target, goal, kind), opts)?;
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
        planner: kind.planner(),
        raw_path: out.path.clone(),
        path: out.path,
        trajectory: out.trajectory,
        timing: timing(opts),
        reached_goal: 0,
        stats,
    })
}

/// The Cartesian path of [`cartesian_motion`].
fn motion(
    checker: &dyn Checker,
    solver: &mut IkSolver,
    start: &[f64],
    (target, goal, kind): (&Isometry3<f64>, Option<&[f64]>, PilzPath),
    opts: &CartesianOptions,
) -> Result<CartesianPath, PlanError> {
    let blocked = |reason: String| PlanError::Blocked {
        planner: kind.planner(),
        reason,
    };
    let poses = match kind {
        PilzPath::Lin => vec![*target],
        PilzPath::Circ(aux) => {
            let from = solver
                .link_pose(start)
                .map_err(|e| PlanError::InvalidStart(e.to_string()))?;
            arc_poses(&from, target, &aux, opts.max_step).map_err(blocked)?
        }
    };
    let out = plan_cartesian(checker, solver, start, &poses, opts)?;
    let what = kind.what();
    if out.fraction < 1.0 {
        let why = out
            .stop
            .as_ref()
            .map_or(String::new(), |s| format!(": {s}"));
        return Err(blocked(format!(
            "{what} stops at {:.1} % of the way{why} (no detour is planned)",
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
                "{what} reaches the goal's pose in another joint configuration (joints up to \
                 {widest:.4} apart); give the goal as a pose, or plan with PTP"
            )));
        }
        // The motion ends exactly in the goal (the last step's end moves by the inverse
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

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Translation3, UnitQuaternion};

    /// Poses of a quarter circle of radius 0.1 about `c` in the x-z plane, from `a` to `b`,
    /// through `m` at its middle.
    fn quarter() -> (Vector3<f64>, Isometry3<f64>, Vector3<f64>, Isometry3<f64>) {
        let c = Vector3::new(0.4, 0.1, 0.5);
        let at = |t: f64| c + Vector3::new(t.cos(), 0.0, t.sin()) * 0.1;
        let turn = UnitQuaternion::from_euler_angles(0.0, 0.0, 0.6);
        let a = Isometry3::from_parts(Translation3::from(at(0.0)), UnitQuaternion::identity());
        let b = Isometry3::from_parts(Translation3::from(at(std::f64::consts::FRAC_PI_2)), turn);
        (c, a, at(std::f64::consts::FRAC_PI_4), b)
    }

    #[test]
    fn arcs_through_an_interim_point_or_about_a_centre() {
        let (c, a, m, b) = quarter();
        for aux in [CircPoint::Interim(m), CircPoint::Center(c)] {
            let poses = arc_poses(&a, &b, &aux, 0.01).unwrap();
            // A quarter of 2 pi 0.1 m in steps of at most 1 cm.
            assert_eq!(poses.len(), 16, "{aux:?}");
            assert_eq!(poses.last(), Some(&b));
            let mut before = a.translation.vector;
            for p in &poses {
                let x = p.translation.vector;
                assert!(((x - c).norm() - 0.1).abs() < 1e-12, "{aux:?}: {x:?}");
                assert!((x - before).norm() <= 0.01 + 1e-12);
                before = x;
            }
            // The middle pose is the interim point, turned halfway.
            let mid = poses[7].translation.vector;
            assert!((mid - m).norm() < 1e-12, "{mid:?}");
            assert!((poses[7].rotation.angle() - 0.3).abs() < 1e-12);
        }
        // Through an interim point on the far side: three quarters round the other way.
        let far = c + (c - m);
        let poses = arc_poses(&a, &b, &CircPoint::Interim(far), 0.01).unwrap();
        assert_eq!(poses.len(), 48);
        assert!(poses
            .iter()
            .any(|p| (p.translation.vector - far).norm() < 0.005));
        for p in &poses {
            assert!(((p.translation.vector - c).norm() - 0.1).abs() < 1e-12);
        }
        // Circles that are not defined.
        let on_line = a.translation.vector.lerp(&b.translation.vector, 0.5);
        let e = arc_poses(&a, &b, &CircPoint::Interim(on_line), 0.01).unwrap_err();
        assert!(e.contains("on one line"), "{e}");
        let e = arc_poses(&a, &b, &CircPoint::Center(c + Vector3::x() * 0.01), 0.01).unwrap_err();
        assert!(e.contains("from the centre"), "{e}");
        let opposite = Isometry3::translation(c.x - 0.1, c.y, c.z);
        let e = arc_poses(&a, &opposite, &CircPoint::Center(c), 0.01).unwrap_err();
        assert!(e.contains("one line"), "{e}");
    }
}
