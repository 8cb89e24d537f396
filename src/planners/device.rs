//! Planners that run whole on the device (`PlanRequest::on_device`): RRT-Connect with every
//! iteration inside one GPU launch (`kernels/rrtc.cu`, `src/gpu/rrtc.rs`), instead of one host
//! round trip per extension as with [`rrt_connect`](super::rrt_connect) on the CUDA backend.
//!
//! The algorithm is [`rrt_connect`](super::rrt_connect)'s, batch by batch: the straight motion
//! first, dynamic domains with shorter steps from failing vertices, greedy chains of range-long
//! steps from the other tree, tree balance with yielded turns. Each iteration draws one sample
//! per warp of the block ([`DeviceRrtcSettings::warps`]) from a counter-based generator, so the
//! plans differ from the CPU planner's (whose generator is ChaCha8) but are deterministic for a
//! seed. Every motion is checked as [`Checker::check_motions`] checks it (the motion kernels'
//! per-configuration tests, refined the same way), and the path is re-validated on the host
//! like every other planner's.
//!
//! A goal set is planned in the same launch: the attempts of a problem are shared out over its
//! goals ([`DeviceProblem`], [`fit_goal_set`]), each attempt growing its goal tree from its own
//! goal, and the race of the attempts picks the goal reached (the one solved in the fewest
//! iterations, ties to the lowest attempt), so a goal that cannot be reached costs no more time
//! than the others take.

use std::time::Duration;

use super::{
    default_dd_radius, default_range, Context, PlanError, PlanRequest, PlannerId, RawSolution,
};
use crate::collision::{Checker, CollisionError, MAX_REFINEMENTS};
use crate::robot::JointSpace;

/// Most configurations one pass over one motion may take on the device (2^20): the device
/// planner checks a motion to its verdict inside the launch, without looking at the clock, so a
/// resolution far finer than the motions would keep the launch busy past any time limit. Both
/// `range / resolution` and the straight motion's length / resolution must stay within it.
pub const MAX_DEVICE_SEGMENTS: f64 = 1_048_576.0;

/// Warps (samples per iteration) of a device RRT-Connect block unless
/// [`DEVICE_WARPS_ENV`] says otherwise.
pub const DEFAULT_DEVICE_WARPS: u32 = 8;
/// Most warps of a block (`GMP_RRTC_MAX_WARPS` in `kernels/rrtc.cu`).
pub const MAX_DEVICE_WARPS: u32 = 32;
/// Vertices per tree unless [`DEVICE_CAPACITY_ENV`] says otherwise (the MBM Panda and UR5
/// problems end with at most a few hundred: `results/mbm/device_rrtc_H100_2026-11-26/`).
pub const DEFAULT_TREE_CAPACITY: u32 = 4096;
/// Most attempts per problem of one device run (the kernel's keys hold the attempt in 8 bits).
pub const MAX_DEVICE_ATTEMPTS: u32 = 256;
/// Environment variable: warps per block of the device planner (1 to [`MAX_DEVICE_WARPS`]).
pub const DEVICE_WARPS_ENV: &str = "GMP_RRTC_WARPS";
/// Environment variable: vertices per tree of the device planner (at least 2).
pub const DEVICE_CAPACITY_ENV: &str = "GMP_RRTC_CAPACITY";
/// Extra attempts per main attempt of a hard problem unless [`DEVICE_EXTRA_ENV`] says
/// otherwise ([`DeviceRrtcSettings::extra_attempts`]).
pub const DEFAULT_EXTRA_PER_ATTEMPT: u32 = 3;
/// Iterations without a path after which a problem gets its extra attempts unless
/// [`DEVICE_ESCALATE_ENV`] says otherwise ([`DeviceRrtcSettings::escalate_after`]).
pub const DEFAULT_ESCALATE_AFTER: u32 = 32;
/// Environment variable: extra attempts per problem of the device planner (0: none).
pub const DEVICE_EXTRA_ENV: &str = "GMP_RRTC_EXTRA";
/// Environment variable: iterations after which a problem gets its extra attempts (at least 1).
pub const DEVICE_ESCALATE_ENV: &str = "GMP_RRTC_ESCALATE";

/// The options of a device RRT-Connect run (see [`super::PlanRequest`] for their meaning).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRrtcSettings {
    /// Longest extension (joint-space distance).
    pub range: f64,
    /// Motion-check resolution.
    pub resolution: f64,
    /// Dynamic domains (and shorter steps from failing vertices).
    pub dynamic_domain: bool,
    /// A vertex's domain radius at its first failure, in units of the range.
    pub dd_radius: f64,
    /// Tree balance.
    pub balance_trees: bool,
    /// Seed of the sample generator.
    pub seed: u64,
    /// Iterations at most.
    pub max_iterations: u32,
    /// Time on the device at most per problem (measured by the device's clock from the start
    /// of the problem's first attempt; extra attempts get what is left).
    pub time_limit: Duration,
    /// Samples per iteration: one per warp of the block (1 to [`MAX_DEVICE_WARPS`]).
    pub warps: u32,
    /// Vertices per tree (at least 2); a full tree ends the run without a path.
    pub tree_capacity: u32,
    /// Refinements of uncertain motions ([`Checker::check_motions_refined`]).
    pub max_refinements: u32,
    /// Independent attempts per problem, one block each (1 to [`MAX_DEVICE_ATTEMPTS`]):
    /// attempt `a` is seeded with [`super::attempt_seed`]`(seed, a)` and heads for goal
    /// `a % goals` of its problem's goal set ([`DeviceProblem`]); only the first attempt per
    /// goal (`a < goals`) tries the straight motion, and the attempt that solves the problem in
    /// the fewest iterations wins (ties: the lowest attempt); the others stop as soon as they
    /// cannot win. The result does not depend on the timing of the blocks.
    pub attempts: u32,
    /// Extra attempts for a problem that proves hard (0: none; `attempts + extra_attempts` at
    /// most [`MAX_DEVICE_ATTEMPTS`]): when no main attempt has solved the problem within
    /// [`escalate_after`](Self::escalate_after) iterations, attempts `attempts ..
    /// attempts + extra_attempts` join the race, on blocks that free up, their iterations
    /// counted from `escalate_after` (as if they had started then). The winner is the smallest
    /// (iterations, attempt) of the main attempts if its iterations are at most
    /// `escalate_after`, else the smallest of all the attempts: still independent of the timing.
    /// [`DeviceOutcome::iterations`] is the winner's own count.
    pub extra_attempts: u32,
    /// Iterations without a path after which a problem gets its extra attempts (at least 1
    /// when there are extra attempts).
    pub escalate_after: u32,
}

impl DeviceRrtcSettings {
    /// An error naming the first unusable setting.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.range.is_finite() && self.range > 0.0) {
            return Err(format!(
                "range must be a positive number, got {}",
                self.range
            ));
        }
        if !(self.resolution.is_finite() && self.resolution > 0.0) {
            return Err(format!(
                "resolution must be a positive number, got {}",
                self.resolution
            ));
        }
        let per_range = self.range / self.resolution;
        if per_range.is_nan() || per_range > MAX_DEVICE_SEGMENTS {
            return Err(format!(
                "resolution {} is too fine for the device planner: a motion of one range ({}) \
                 would take {per_range:.0} configurations per pass (at most {MAX_DEVICE_SEGMENTS}); \
                 use a coarser resolution or a shorter range",
                self.resolution, self.range
            ));
        }
        if self.dynamic_domain && !(self.dd_radius.is_finite() && self.dd_radius > 0.0) {
            return Err(format!(
                "dd_radius must be a positive number, got {}",
                self.dd_radius
            ));
        }
        if !(1..=MAX_DEVICE_WARPS).contains(&self.warps) {
            return Err(format!(
                "warps must be 1 to {MAX_DEVICE_WARPS}, got {}",
                self.warps
            ));
        }
        if !(1..=MAX_DEVICE_ATTEMPTS).contains(&self.attempts) {
            return Err(format!(
                "attempts must be 1 to {MAX_DEVICE_ATTEMPTS}, got {}",
                self.attempts
            ));
        }
        if self.attempts.saturating_add(self.extra_attempts) > MAX_DEVICE_ATTEMPTS {
            return Err(format!(
                "attempts plus extra attempts must be at most {MAX_DEVICE_ATTEMPTS}, got {} + {}",
                self.attempts, self.extra_attempts
            ));
        }
        if self.extra_attempts > 0 && self.escalate_after == 0 {
            return Err("escalate_after must be at least 1 with extra attempts".into());
        }
        if self.tree_capacity < 2 {
            return Err(format!(
                "tree_capacity must be at least 2, got {}",
                self.tree_capacity
            ));
        }
        Ok(())
    }
}

/// How a device run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DeviceStatus {
    /// The trees joined (or the straight motion was valid).
    Solved,
    /// The iteration or time limit came first.
    Limit,
    /// A tree reached [`DeviceRrtcSettings::tree_capacity`].
    TreeFull,
    /// The path did not fit the pool the host reserved for the paths of the launch (reported
    /// as an error, never as an outcome).
    PathPoolFull,
    /// Another attempt at the problem had won already (never an outcome's status).
    Beaten,
}

impl DeviceStatus {
    /// The status of a result word (`kernels/rrtc.cu`), `None` for an unknown one.
    pub fn from_word(w: u32) -> Option<Self> {
        match w {
            0 => Some(Self::Solved),
            1 => Some(Self::Limit),
            2 => Some(Self::TreeFull),
            3 => Some(Self::PathPoolFull),
            4 => Some(Self::Beaten),
            _ => None,
        }
    }
}

/// One problem's result of a device run.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceOutcome {
    /// How the run ended.
    pub status: DeviceStatus,
    /// The path from start to goal (empty unless solved).
    pub path: Vec<Vec<f64>>,
    /// Iterations run (by the winning attempt; without a path, the most any attempt ran).
    pub iterations: u32,
    /// Vertices of both trees at the end (the winning attempt's; without a path, the most).
    pub vertices: u32,
    /// Motions checked (every attempt's).
    pub motions: u32,
    /// Configurations checked (every level of every motion of every attempt).
    pub configs: u64,
    /// Time from the block's start to its end on the device's clock, microseconds (the
    /// longest of the attempts).
    pub device_us: u32,
    /// The winning attempt (0 without a path).
    pub attempt: u32,
}

/// One problem of a device run: a start and its goal set. Attempt `a` of the problem grows its
/// goal tree from `goals[a % goals.len()]` (and, when `a < goals.len()`, tries the straight
/// motion to it first), so with at least as many attempts as goals every goal is raced
/// towards and the problem's path ends at the goal of the winning attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceProblem<'a> {
    /// Where the path starts.
    pub start: &'a [f64],
    /// Where it may end (at least one).
    pub goals: Vec<&'a [f64]>,
}

impl<'a> DeviceProblem<'a> {
    /// A problem with one goal.
    pub fn new(start: &'a [f64], goal: &'a [f64]) -> Self {
        Self {
            start,
            goals: vec![goal],
        }
    }

    /// The start and the whole goal set of `req` (`goal`, then `other_goals`).
    pub fn of_request(req: &'a PlanRequest) -> Self {
        Self {
            start: &req.start,
            goals: req.goals().map(Vec::as_slice).collect(),
        }
    }
}

/// A checker that can plan on its device.
pub trait DevicePlanner: Send + Sync {
    /// Plans every problem of `problems` (all in one launch, each attempt a block) in the
    /// checker's scene. The configurations must be valid ones of the checker's joint space, and
    /// no problem may have more goals than `settings.attempts` (each goal needs an attempt).
    fn rrt_connect_sets(
        &self,
        problems: &[DeviceProblem<'_>],
        settings: &DeviceRrtcSettings,
    ) -> Result<Vec<DeviceOutcome>, CollisionError>;

    /// [`rrt_connect_sets`](Self::rrt_connect_sets) for problems of one goal each, given as
    /// `(start, goal)`.
    fn rrt_connect(
        &self,
        problems: &[(&[f64], &[f64])],
        settings: &DeviceRrtcSettings,
    ) -> Result<Vec<DeviceOutcome>, CollisionError> {
        let sets: Vec<DeviceProblem<'_>> = problems
            .iter()
            .map(|&(s, g)| DeviceProblem::new(s, g))
            .collect();
        self.rrt_connect_sets(&sets, settings)
    }
}

/// Fits `settings` to a goal set of `goals` goals: the main attempts rounded up to a multiple
/// of `goals` (every goal gets as many attempts; rounded down where that would pass
/// [`MAX_DEVICE_ATTEMPTS`]) and the extra attempts cut to what is left of
/// [`MAX_DEVICE_ATTEMPTS`]. An error when the set has more goals than attempts can be.
pub fn fit_goal_set(settings: &mut DeviceRrtcSettings, goals: usize) -> Result<(), String> {
    let g = u32::try_from(goals)
        .ok()
        .filter(|g| (1..=MAX_DEVICE_ATTEMPTS).contains(g))
        .ok_or_else(|| {
            format!(
                "the device planner races an attempt towards every goal: a goal set of {goals} \
                 goals is more than the {MAX_DEVICE_ATTEMPTS} attempts a problem may have"
            )
        })?;
    if g == 1 {
        return Ok(());
    }
    let per_goal = settings.attempts.max(1).div_ceil(g);
    settings.attempts = (per_goal * g).min(MAX_DEVICE_ATTEMPTS / g * g);
    settings.extra_attempts = settings
        .extra_attempts
        .min(MAX_DEVICE_ATTEMPTS - settings.attempts);
    Ok(())
}

/// A positive integer from environment variable `var`, else `default`.
fn env_u32(var: &str, default: u32) -> u32 {
    env_count(var).filter(|&v| v > 0).unwrap_or(default)
}

/// A count (0 included) from environment variable `var`, if it holds one.
fn env_count(var: &str) -> Option<u32> {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
}

/// The device settings of `req` in `space` with `time_limit` left (range, domains, balance,
/// seed, iterations, attempts, and the extra attempts and when they start where the request
/// sets them; warps and tree capacity, and the extra attempts and when they start where it does
/// not, from [`DEVICE_WARPS_ENV`], [`DEVICE_CAPACITY_ENV`], [`DEVICE_EXTRA_ENV`] and
/// [`DEVICE_ESCALATE_ENV`] or their defaults). A request's own extra attempts are taken as
/// given ([`DeviceRrtcSettings::validate`] refuses too many); the default is capped to fit.
pub fn settings_for_request(
    req: &PlanRequest,
    space: &JointSpace,
    time_limit: Duration,
) -> DeviceRrtcSettings {
    let attempts = u32::try_from(req.attempts)
        .unwrap_or(MAX_DEVICE_ATTEMPTS)
        .clamp(1, MAX_DEVICE_ATTEMPTS);
    DeviceRrtcSettings {
        range: req
            .range
            .unwrap_or_else(|| default_range(PlannerId::RrtConnect, space)),
        resolution: req.resolution,
        dynamic_domain: req.dynamic_domain,
        dd_radius: req
            .dd_radius
            .unwrap_or_else(|| default_dd_radius(space.dof())),
        balance_trees: req.balance_trees,
        seed: req.seed,
        max_iterations: req
            .max_iterations
            .map_or(u32::MAX, |m| u32::try_from(m).unwrap_or(u32::MAX)),
        time_limit,
        warps: env_u32(DEVICE_WARPS_ENV, DEFAULT_DEVICE_WARPS).min(MAX_DEVICE_WARPS),
        tree_capacity: env_u32(DEVICE_CAPACITY_ENV, DEFAULT_TREE_CAPACITY).max(2),
        max_refinements: MAX_REFINEMENTS,
        attempts,
        extra_attempts: req.device_extra_attempts.unwrap_or_else(|| {
            env_count(DEVICE_EXTRA_ENV)
                .unwrap_or(DEFAULT_EXTRA_PER_ATTEMPT.saturating_mul(attempts))
                .min(MAX_DEVICE_ATTEMPTS - attempts)
        }),
        escalate_after: req
            .device_escalate_after
            .unwrap_or_else(|| env_u32(DEVICE_ESCALATE_ENV, DEFAULT_ESCALATE_AFTER)),
    }
}

/// An error when the straight motion from `start` to `goal` would take more than
/// [`MAX_DEVICE_SEGMENTS`] configurations per pass at `resolution`.
pub fn check_straight(
    space: &JointSpace,
    start: &[f64],
    goal: &[f64],
    resolution: f64,
) -> Result<(), String> {
    let straight = space.distance(start, goal) / resolution;
    if straight.is_nan() || straight > MAX_DEVICE_SEGMENTS {
        return Err(format!(
            "resolution {resolution} is too fine for the device planner: the straight motion from \
             start to goal would take {straight:.0} configurations per pass (at most \
             {MAX_DEVICE_SEGMENTS})"
        ));
    }
    Ok(())
}

/// RRT-Connect on the device of `ctx`'s checker (see the module documentation).
pub(crate) fn solve(ctx: &mut Context<'_, '_>) -> Result<RawSolution, PlanError> {
    if ctx.req.planner != PlannerId::RrtConnect {
        return Err(PlanError::InvalidRequest(format!(
            "on_device: only rrt_connect runs on the device, not {}",
            ctx.req.planner
        )));
    }
    // The request first: bad input is reported as such, GPU or not.
    let left = ctx
        .deadline
        .saturating_duration_since(std::time::Instant::now());
    let problem = DeviceProblem::of_request(ctx.req);
    let mut settings = settings_for_request(ctx.req, &ctx.space, left);
    fit_goal_set(&mut settings, problem.goals.len()).map_err(PlanError::InvalidRequest)?;
    settings.validate().map_err(PlanError::InvalidRequest)?;
    for goal in &problem.goals {
        check_straight(&ctx.space, &ctx.req.start, goal, settings.resolution)
            .map_err(PlanError::InvalidRequest)?;
    }
    let Some(device) = ctx.checker.device_planner() else {
        return Err(PlanError::InvalidRequest(format!(
            "on_device needs a GPU checker (backend cuda, or auto / hybrid with a GPU); this one is {}",
            ctx.checker.backend().name()
        )));
    };
    let outcome = device
        .rrt_connect_sets(std::slice::from_ref(&problem), &settings)?
        .into_iter()
        .next()
        .ok_or_else(|| CollisionError::Backend {
            backend: "cuda".into(),
            message: "the device planner returned no result".into(),
        })?;
    ctx.device_work = (u64::from(outcome.motions), outcome.configs);
    ctx.device_time = Some(Duration::from_micros(u64::from(outcome.device_us)));
    ctx.attempts_run = (settings.attempts as usize, outcome.attempt as usize);
    raw_solution(outcome, ctx.req)
}

/// The raw path of a device run of `req`, or its "no path" error.
pub(crate) fn raw_solution(
    outcome: DeviceOutcome,
    req: &PlanRequest,
) -> Result<RawSolution, PlanError> {
    let vertices = outcome.vertices as usize;
    match outcome.status {
        DeviceStatus::Solved => Ok(RawSolution {
            path: outcome.path,
            iterations: outcome.iterations as usize,
            vertices,
            edges: vertices.saturating_sub(2),
            cost_over_time: Vec::new(),
        }),
        _ => Err(PlanError::NoPath {
            planner: req.planner,
            time_limit: req.time_limit,
            iterations: outcome.iterations as usize,
            vertices,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm() -> JointSpace {
        JointSpace {
            names: (0..7).map(|j| format!("j{j}")).collect(),
            lower: vec![-2.9; 7],
            upper: vec![2.9; 7],
            continuous: vec![false; 7],
            max_velocity: vec![1.0; 7],
            max_acceleration: vec![1.0; 7],
            max_jerk: vec![f64::INFINITY; 7],
        }
    }

    #[test]
    fn a_request_sets_the_extra_attempts_and_when_they_start() {
        let space = arm();
        let mut req = PlanRequest::new(vec![0.0; 7], vec![1.0; 7], PlannerId::RrtConnect);
        req.attempts = 8;
        req.device_extra_attempts = Some(5);
        req.device_escalate_after = Some(64);
        let s = settings_for_request(&req, &space, Duration::from_secs(1));
        assert_eq!((s.attempts, s.extra_attempts, s.escalate_after), (8, 5, 64));
        assert_eq!(s.validate(), Ok(()));
        // None at all: valid with the main attempts only.
        req.device_extra_attempts = Some(0);
        let s = settings_for_request(&req, &space, Duration::from_secs(1));
        assert_eq!(s.extra_attempts, 0);
        assert_eq!(s.validate(), Ok(()));
        // Too many for the kernel's keys: refused by name, not cut silently.
        req.device_extra_attempts = Some(250);
        let e = settings_for_request(&req, &space, Duration::from_secs(1))
            .validate()
            .unwrap_err();
        assert!(e.contains("extra attempts"), "{e}");
        // Extra attempts that would never start.
        req.device_extra_attempts = Some(3);
        req.device_escalate_after = Some(0);
        let e = settings_for_request(&req, &space, Duration::from_secs(1))
            .validate()
            .unwrap_err();
        assert!(e.contains("escalate_after"), "{e}");
    }

    #[test]
    fn a_goal_set_gets_the_same_attempts_for_every_goal() {
        let mut req = PlanRequest::new(vec![0.0; 7], vec![1.0; 7], PlannerId::RrtConnect);
        req.attempts = 8;
        req.device_extra_attempts = Some(24);
        let base = settings_for_request(&req, &arm(), Duration::from_secs(1));
        let fit = |goals: usize| {
            let mut s = base.clone();
            fit_goal_set(&mut s, goals).map(|()| (s.attempts, s.extra_attempts))
        };
        assert_eq!(fit(1), Ok((8, 24)));
        assert_eq!(fit(2), Ok((8, 24)));
        assert_eq!(fit(3), Ok((9, 24)));
        assert_eq!(fit(20), Ok((20, 24)));
        // Rounded down where up would pass the keys' 256, the extra attempts cut to fit.
        assert_eq!(fit(250), Ok((250, 6)));
        assert_eq!(fit(256), Ok((256, 0)));
        let e = fit(257).unwrap_err();
        assert!(e.contains("257 goals"), "{e}");
        assert!(fit(0).is_err());
        for goals in [1, 3, 20, 250, 256] {
            let mut s = base.clone();
            fit_goal_set(&mut s, goals).expect("fits");
            assert_eq!(s.validate(), Ok(()));
            assert_eq!(s.attempts as usize % goals, 0);
        }
        // 8 attempts for 100 goals: 100.
        req.attempts = 8;
        let mut s = settings_for_request(&req, &arm(), Duration::from_secs(1));
        fit_goal_set(&mut s, 100).expect("fits");
        assert_eq!((s.attempts, s.extra_attempts), (100, 24));
    }

    #[test]
    fn without_a_request_value_the_default_is_three_per_attempt() {
        if std::env::var_os(DEVICE_EXTRA_ENV).is_some()
            || std::env::var_os(DEVICE_ESCALATE_ENV).is_some()
        {
            eprintln!("skipped: {DEVICE_EXTRA_ENV} or {DEVICE_ESCALATE_ENV} is set");
            return;
        }
        let mut req = PlanRequest::new(vec![0.0; 7], vec![1.0; 7], PlannerId::RrtConnect);
        req.attempts = 8;
        let s = settings_for_request(&req, &arm(), Duration::from_secs(1));
        assert_eq!(
            (s.extra_attempts, s.escalate_after),
            (3 * 8, DEFAULT_ESCALATE_AFTER)
        );
        // The default is capped so that attempts and extra attempts fit the keys.
        req.attempts = 200;
        let s = settings_for_request(&req, &arm(), Duration::from_secs(1));
        assert_eq!(s.extra_attempts, MAX_DEVICE_ATTEMPTS - 200);
        assert_eq!(s.validate(), Ok(()));
    }
}
