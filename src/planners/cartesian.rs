//! Cartesian paths: a link moved along straight lines through a list of poses (the end
//! effector's approach to a grasp, a retreat, a weld seam), as MoveIt's `computeCartesianPath`
//! does.
//!
//! Each straight piece between consecutive poses (the first from the link's pose at the start)
//! is cut into steps of at most [`CartesianOptions::max_step`] metres and
//! [`CartesianOptions::max_rotation_step`] radians, the position interpolated linearly and the
//! orientation spherically. Every step's pose is solved by inverse kinematics from the
//! previous step's configuration alone (no random restarts: the arm must move continuously).
//! Between two steps the arm moves in a straight joint-space line; the link's pose at the
//! middle of that motion must stay within [`CartesianOptions::max_deviation`] of the Cartesian
//! line and [`CartesianOptions::max_rotation_deviation`] of the interpolated orientation, or
//! the step is halved (up to [`MAX_HALVINGS`] times). A step that still leaves the line is a
//! jump through another arm configuration, and the path ends before it.
//!
//! All steps' motions are then collision checked in one batched call on the request's
//! checker (the GPU where it is one), and the path ends before the first motion in collision.
//! MoveIt's relative jump threshold is applied before that. The result says how much of the
//! path was achieved ([`CartesianPath::fraction`]) and why it stopped, and its trajectory is
//! timed through the steps without stopping ([`crate::trajectory::time_parameterize_through`])
//! and re-validated like every plan.

use std::fmt;
use std::time::{Duration, Instant};

use nalgebra::Isometry3;
use serde::Serialize;

use super::PlanError;
use crate::collision::{Checker, ConfigBatch, MotionBatch};
use crate::robot::ik::{IkError, IkSolver};
use crate::robot::JointSpace;
use crate::trajectory::{self, Trajectory};

/// How often a step whose middle leaves the Cartesian line is halved before the path ends
/// there.
pub const MAX_HALVINGS: usize = 4;

/// Options of a Cartesian path.
#[derive(Clone, Debug, PartialEq)]
pub struct CartesianOptions {
    /// Largest translation of one step (m), positive. MoveIt's `eef_step`.
    pub max_step: f64,
    /// Largest rotation of one step (rad), positive.
    pub max_rotation_step: f64,
    /// Largest distance (m) of the link's position, halfway through a step's joint motion,
    /// from the straight line of the step, positive.
    pub max_deviation: f64,
    /// Largest angle (rad) between the link's orientation halfway through a step's joint
    /// motion and the interpolated orientation there, positive.
    pub max_rotation_deviation: f64,
    /// MoveIt's relative jump threshold: the path ends before the first step whose
    /// joint-space length exceeds this many times the mean step length (0: off).
    pub jump_threshold: f64,
    /// Least-squares iterations of each step's inverse kinematics at most.
    pub ik_iterations: usize,
    /// Collision-check resolution (joint-space distance between checked configurations).
    pub resolution: f64,
    /// Scaling of the joint velocity limits, in `(0, 1]`.
    pub vel_scale: f64,
    /// Scaling of the joint acceleration limits, in `(0, 1]`.
    pub acc_scale: f64,
}

impl Default for CartesianOptions {
    fn default() -> Self {
        Self {
            max_step: 0.01,
            max_rotation_step: 0.05,
            max_deviation: 0.005,
            max_rotation_deviation: 0.05,
            jump_threshold: 0.0,
            ik_iterations: 200,
            resolution: 0.01,
            vel_scale: 1.0,
            acc_scale: 1.0,
        }
    }
}

impl CartesianOptions {
    /// Errors naming the first unusable option.
    pub fn check(&self) -> Result<(), PlanError> {
        let positive = [
            ("max_step", self.max_step),
            ("max_rotation_step", self.max_rotation_step),
            ("max_deviation", self.max_deviation),
            ("max_rotation_deviation", self.max_rotation_deviation),
            ("resolution", self.resolution),
        ];
        for (name, v) in positive {
            if !(v > 0.0 && v.is_finite()) {
                return Err(PlanError::InvalidRequest(format!(
                    "{name} must be positive and finite, got {v}"
                )));
            }
        }
        if !(self.jump_threshold >= 0.0 && self.jump_threshold.is_finite()) {
            return Err(PlanError::InvalidRequest(format!(
                "jump_threshold must be 0 (off) or positive, got {}",
                self.jump_threshold
            )));
        }
        if self.ik_iterations == 0 {
            return Err(PlanError::InvalidRequest(
                "ik_iterations must be at least 1".into(),
            ));
        }
        for (name, v) in [("vel_scale", self.vel_scale), ("acc_scale", self.acc_scale)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(PlanError::InvalidRequest(format!(
                    "{name} must be in (0, 1], got {v}"
                )));
            }
        }
        Ok(())
    }
}

/// Why a Cartesian path ended before its last pose.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum CartesianStop {
    /// No configuration near the previous one reaches step `step`'s pose.
    NoIkSolution {
        /// The step (0-based, over the whole path).
        step: usize,
    },
    /// The link leaves the line during step `step` however often it is halved: the arm would
    /// swing through another configuration.
    Deviation {
        /// The step.
        step: usize,
        /// Distance from the line at the middle of the last halving tried (m).
        position: f64,
        /// Angle from the interpolated orientation there (rad).
        angle: f64,
    },
    /// Step `step` is longer in joint space than the relative jump threshold allows.
    Jump {
        /// The step.
        step: usize,
        /// Its joint-space length.
        length: f64,
        /// The mean step length it was compared with.
        mean: f64,
    },
    /// Step `step`'s motion is in collision.
    Collision {
        /// The step.
        step: usize,
    },
}

impl fmt::Display for CartesianStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CartesianStop::NoIkSolution { step } => write!(
                f,
                "step {step}: no inverse kinematics solution near the previous configuration"
            ),
            CartesianStop::Deviation {
                step,
                position,
                angle,
            } => write!(
                f,
                "step {step}: the link leaves the straight line ({position:.4} m, {angle:.4} rad \
                 halfway through the motion): the arm would swing through another configuration"
            ),
            CartesianStop::Jump { step, length, mean } => write!(
                f,
                "step {step}: joint-space jump of {length:.4} against a mean step of {mean:.4} \
                 (jump_threshold)"
            ),
            CartesianStop::Collision { step } => write!(f, "step {step}: motion in collision"),
        }
    }
}

/// Counters and timings of a Cartesian path.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CartesianStats {
    /// Time in inverse kinematics (with the deviation checks).
    pub ik_time: Duration,
    /// Time in the batched collision check.
    pub check_time: Duration,
    /// Time timing and re-validating the trajectory.
    pub timing_time: Duration,
    /// Configurations the collision check covers at the resolution (start included).
    pub collision_checks: u64,
    /// Steps halved because their middle left the line.
    pub halvings: usize,
    /// Largest distance (m) of the link from the line at the middle of a kept step's motion.
    pub max_deviation: f64,
    /// Largest angle (rad) from the interpolated orientation there.
    pub max_rotation_deviation: f64,
}

/// A Cartesian path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CartesianPath {
    /// Group configurations from the start, one per step reached (halvings included).
    pub path: Vec<Vec<f64>>,
    /// Share of the steps reached, in `[0, 1]` (1: the link reached the last pose).
    pub fraction: f64,
    /// Steps of the whole path.
    pub steps: usize,
    /// Steps reached.
    pub steps_reached: usize,
    /// Why the path ended early (`None` when `fraction` is 1).
    pub stop: Option<CartesianStop>,
    /// The timed trajectory through `path`.
    pub trajectory: Trajectory,
    /// Whether the trajectory stops at every step (the timing's fallback) instead of moving
    /// through.
    pub stops_at_steps: bool,
    /// A bound on the joint-space distance between the controller's spline through the points
    /// and the checked straight motions.
    pub spline_deviation: f64,
    /// Counters and timings.
    pub stats: CartesianStats,
}

/// The pose at fraction `t` from `a` to `b`: position linear, orientation spherical (the
/// shorter way; `a`'s where both are equal).
pub fn interpolate_pose(a: &Isometry3<f64>, b: &Isometry3<f64>, t: f64) -> Isometry3<f64> {
    let p = a.translation.vector.lerp(&b.translation.vector, t);
    let r = a
        .rotation
        .try_slerp(&b.rotation, t, 1e-12)
        .unwrap_or(a.rotation);
    Isometry3::from_parts(p.into(), r)
}

/// Distance from `p` to the segment from `a` to `b`.
fn distance_to_segment(
    p: &nalgebra::Vector3<f64>,
    a: &nalgebra::Vector3<f64>,
    b: &nalgebra::Vector3<f64>,
) -> f64 {
    let ab = b - a;
    let len2 = ab.norm_squared();
    let t = if len2 > 0.0 {
        ((p - a).dot(&ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (p - (a + ab * t)).norm()
}

/// The step poses: for each piece from the previous pose to the next waypoint, the poses at
/// the ends of its steps.
fn step_poses(
    start: &Isometry3<f64>,
    waypoints: &[Isometry3<f64>],
    opts: &CartesianOptions,
) -> Vec<Isometry3<f64>> {
    let mut out = Vec::new();
    let mut prev = *start;
    for w in waypoints {
        let dist = (w.translation.vector - prev.translation.vector).norm();
        let angle = prev.rotation.angle_to(&w.rotation);
        // Rounding must not add a step: 0.1 / 0.01 is 10.000000000000002, and an angle from
        // quaternions carries more noise.
        let count = |x: f64| (x * (1.0 - 1e-9)).ceil();
        let n = count(dist / opts.max_step)
            .max(count(angle / opts.max_rotation_step))
            .max(1.0) as usize;
        for i in 1..=n {
            out.push(if i == n {
                *w
            } else {
                interpolate_pose(&prev, w, i as f64 / n as f64)
            });
        }
        prev = *w;
    }
    out
}

/// What reaching one step gave.
enum Reached {
    /// The configurations (the step's end last) and the deviation measured at each middle.
    Configs(Vec<(Vec<f64>, f64, f64)>),
    /// The step could not be reached.
    Stop(CartesianStop),
}

/// The inverse kinematics walk along the steps.
struct Walker<'s, 'r> {
    solver: &'s mut IkSolver<'r>,
    space: &'s JointSpace,
    opts: &'s CartesianOptions,
    /// Steps halved so far.
    halved: usize,
}

impl Walker<'_, '_> {
    /// Moves from `q` (at pose `from`) to pose `to`, halving while the middle of the joint
    /// motion leaves the line (`halvings`: how often this piece was halved already).
    fn reach(
        &mut self,
        q: &[f64],
        from: &Isometry3<f64>,
        to: &Isometry3<f64>,
        step: usize,
        halvings: usize,
    ) -> Result<Reached, PlanError> {
        let bad = |e: IkError| PlanError::InvalidRequest(e.to_string());
        self.solver.set_target_pose(*to).map_err(bad)?;
        let Some(sol) = self
            .solver
            .solve_from(q, self.opts.ik_iterations)
            .map_err(bad)?
        else {
            return Ok(Reached::Stop(CartesianStop::NoIkSolution { step }));
        };
        let mut mid = vec![0.0; q.len()];
        self.space.interpolate(q, &sol.config, 0.5, &mut mid);
        let at = self.solver.link_pose(&mid).map_err(bad)?;
        let position = distance_to_segment(
            &at.translation.vector,
            &from.translation.vector,
            &to.translation.vector,
        );
        let middle = interpolate_pose(from, to, 0.5);
        let angle = at.rotation.angle_to(&middle.rotation);
        if position <= self.opts.max_deviation && angle <= self.opts.max_rotation_deviation {
            return Ok(Reached::Configs(vec![(sol.config, position, angle)]));
        }
        if halvings >= MAX_HALVINGS {
            return Ok(Reached::Stop(CartesianStop::Deviation {
                step,
                position,
                angle,
            }));
        }
        self.halved += 1;
        let first = match self.reach(q, from, &middle, step, halvings + 1)? {
            Reached::Configs(c) => c,
            stop => return Ok(stop),
        };
        let Some((q_mid, _, _)) = first.last() else {
            return Ok(Reached::Stop(CartesianStop::NoIkSolution { step }));
        };
        let q_mid = q_mid.clone();
        match self.reach(&q_mid, &middle, to, step, halvings + 1)? {
            Reached::Configs(second) => {
                Ok(Reached::Configs(first.into_iter().chain(second).collect()))
            }
            stop => Ok(stop),
        }
    }
}

/// Moves `solver`'s link from its pose at `start` (group configuration) through `waypoints`
/// (poses of the link in the root frame) along straight lines; see the module documentation.
/// The solver's tolerances apply to every step. Errors: an unusable option or waypoint, a
/// start outside the limits or in collision, a checker failure, and a trajectory that fails
/// its re-validation. A path that ends early is a result with `fraction < 1`, not an error.
pub fn plan_cartesian(
    checker: &dyn Checker,
    solver: &mut IkSolver,
    start: &[f64],
    waypoints: &[Isometry3<f64>],
    opts: &CartesianOptions,
) -> Result<CartesianPath, PlanError> {
    opts.check()?;
    let space = checker.space().clone();
    space.validate(start).map_err(PlanError::InvalidStart)?;
    if waypoints.is_empty() {
        return Err(PlanError::InvalidRequest(
            "a Cartesian path needs at least one waypoint".into(),
        ));
    }
    for (i, w) in waypoints.iter().enumerate() {
        let t = w.translation.vector;
        let r = w.rotation.coords;
        if !(t.iter().all(|v| v.is_finite()) && r.iter().all(|v| v.is_finite())) {
            return Err(PlanError::InvalidRequest(format!(
                "waypoint {i} is not finite"
            )));
        }
    }
    let mut stats = CartesianStats::default();
    let mut start_batch = ConfigBatch::with_capacity(space.dof(), 1);
    start_batch.push(start)?;
    if !checker
        .check_configs(&start_batch)?
        .first()
        .copied()
        .unwrap_or(false)
    {
        return Err(PlanError::InvalidStart(super::in_collision(
            "start", checker, start,
        )));
    }
    let t0 = Instant::now();
    let start_pose = solver
        .link_pose(start)
        .map_err(|e| PlanError::InvalidRequest(e.to_string()))?;
    let targets = step_poses(&start_pose, waypoints, opts);
    // The configurations and, for each, the step it ends (`None`: the first half of a halved
    // step).
    let mut path: Vec<Vec<f64>> = vec![start.to_vec()];
    let mut ends: Vec<Option<usize>> = vec![None];
    let mut stop = None;
    let mut from = start_pose;
    let mut walker = Walker {
        solver,
        space: &space,
        opts,
        halved: 0,
    };
    for (step, to) in targets.iter().enumerate() {
        let q = path[path.len() - 1].clone();
        match walker.reach(&q, &from, to, step, 0)? {
            Reached::Configs(configs) => {
                let last = configs.len() - 1;
                for (i, (c, position, angle)) in configs.into_iter().enumerate() {
                    stats.max_deviation = stats.max_deviation.max(position);
                    stats.max_rotation_deviation = stats.max_rotation_deviation.max(angle);
                    path.push(c);
                    ends.push((i == last).then_some(step));
                }
            }
            Reached::Stop(s) => {
                stop = Some(s);
                break;
            }
        }
        from = *to;
    }
    stats.halvings = walker.halved;
    stats.ik_time = t0.elapsed();
    // MoveIt's relative jump threshold, over the motions found.
    if opts.jump_threshold > 0.0 && path.len() > 1 {
        let lengths: Vec<f64> = path
            .windows(2)
            .map(|w| space.distance(&w[0], &w[1]))
            .collect();
        let mean = lengths.iter().sum::<f64>() / lengths.len() as f64;
        if let Some(i) = lengths.iter().position(|&l| l > opts.jump_threshold * mean) {
            let step = step_of(&ends, i + 1);
            cut(&mut path, &mut ends, i);
            stop = Some(CartesianStop::Jump {
                step,
                length: lengths[i],
                mean,
            });
        }
    }
    // Every motion in one batched check.
    let t1 = Instant::now();
    if path.len() > 1 {
        let mut motions = MotionBatch::new(space.dof());
        for w in path.windows(2) {
            motions.push(&w[0], &w[1])?;
            stats.collision_checks += space.segments(&w[0], &w[1], opts.resolution) as u64;
        }
        let verdicts = checker.check_motions(&motions, opts.resolution)?;
        if let Some(i) = verdicts.iter().position(|ok| !ok) {
            let step = step_of(&ends, i + 1);
            cut(&mut path, &mut ends, i);
            stop = Some(CartesianStop::Collision { step });
        }
    }
    stats.collision_checks += 1;
    stats.check_time = t1.elapsed();
    // Whole steps only: drop the first half of a halved step whose end was not reached.
    while path.len() > 1 && ends[ends.len() - 1].is_none() {
        path.pop();
        ends.pop();
    }
    let steps_reached = ends.iter().rev().find_map(|e| *e).map_or(0, |s| s + 1);
    let t2 = Instant::now();
    let timed =
        trajectory::time_parameterize_through(&space, &path, opts.vel_scale, opts.acc_scale)?;
    trajectory::validate_along(checker, &path, &timed.trajectory, opts.resolution)
        .map_err(PlanError::ValidationFailed)?;
    stats.timing_time = t2.elapsed();
    let steps = targets.len();
    Ok(CartesianPath {
        fraction: steps_reached as f64 / steps as f64,
        stop: if steps_reached == steps { None } else { stop },
        path,
        steps,
        steps_reached,
        trajectory: timed.trajectory,
        stops_at_steps: timed.stopped_at_waypoints,
        spline_deviation: timed.spline_deviation,
        stats,
    })
}

/// The step that configuration `i` of the path belongs to (the next step end at or after it).
fn step_of(ends: &[Option<usize>], i: usize) -> usize {
    ends[i..]
        .iter()
        .find_map(|e| *e)
        .unwrap_or_else(|| ends.iter().rev().find_map(|e| *e).map_or(0, |s| s + 1))
}

/// Keeps the path up to configuration `i` (the start of the first rejected motion).
fn cut(path: &mut Vec<Vec<f64>>, ends: &mut Vec<Option<usize>>, i: usize) {
    path.truncate(i + 1);
    ends.truncate(i + 1);
}
