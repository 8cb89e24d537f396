//! Sampling-based planners on the batched [`Checker`]: PRM, lazy PRM, RRT, RRT* and
//! RRT-Connect.
//!
//! Every planner issues its collision work in batches (many samples, many motions per call),
//! which is what makes the GPU backend pay off; on the CPU backend the same code runs
//! unchanged. [`plan`] validates the request, runs the chosen planner, shortcuts the path,
//! times it and re-validates the result at the requested resolution: a planner never returns
//! an invalid path.
//!
//! Determinism: all random choices come from a `ChaCha8Rng` seeded with the request seed, and
//! nothing that affects results iterates a hash map. A run that ends before its time limit (a
//! first solution for PRM, lazy PRM, RRT and RRT-Connect; `max_iterations` for RRT*) gives
//! the same path for the same seed, request, checker verdicts and (for PRM) roadmap.

pub mod batch;
pub mod cartesian;
pub mod constrained;
pub use batch::plan_many;
pub mod device;
pub mod dynamic_roadmap;
pub mod ompl;
pub mod pilz;
pub mod pose;
pub mod prm;
mod rrt;
pub mod rrt_connect;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::collision::{
    Backend, Checker, CollisionError, ConfigBatch, MotionBatch, MAX_REFINEMENTS,
};
use crate::roadmap::{NnError, RoadmapError};
use crate::robot::JointSpace;
use crate::trajectory::{self, Trajectory, TrajectoryError};

/// Which planner runs a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum PlannerId {
    /// Probabilistic roadmap: every sampled edge is checked (batched), union-find tells when
    /// start and goal are connected, then A* finds the shortest path.
    Prm,
    /// Lazy PRM: edges are checked only when they lie on a candidate shortest path.
    LazyPrm,
    /// Rapidly-exploring random tree from the start, with goal bias.
    Rrt,
    /// Asymptotically optimal RRT*: best parent among near vertices, rewiring, anytime.
    RrtStar,
    /// Bidirectional RRT with greedy connection.
    RrtConnect,
    /// Pilz's PTP: the straight joint-space motion from start to goal, or none (no detour).
    Ptp,
    /// Pilz's LIN: a link moved along a straight line to its goal pose, or none (no detour).
    /// It needs the robot's kinematics: the planning service and `gmp plan` plan it
    /// ([`pilz::cartesian_motion`]); [`plan`] refuses it.
    Lin,
    /// Pilz's CIRC: a link moved along an arc of a circle to its goal pose, or none. Like LIN
    /// it needs the robot's kinematics ([`pilz::cartesian_motion`]).
    Circ,
}

impl PlannerId {
    /// The motions of MoveIt's Pilz industrial motion planner: `PTP`, `LIN` and `CIRC` (also
    /// lower case).
    pub const PILZ: [PlannerId; 3] = [PlannerId::Ptp, PlannerId::Lin, PlannerId::Circ];

    /// All sampling-based planners, in a fixed order.
    pub const ALL: [PlannerId; 5] = [
        PlannerId::Prm,
        PlannerId::LazyPrm,
        PlannerId::Rrt,
        PlannerId::RrtStar,
        PlannerId::RrtConnect,
    ];

    /// The planner of an OMPL planner id as MoveIt clients send them (`planner_id` of a
    /// `MotionPlanRequest`, the RViz panel's planner list): `RRTConnect`, `RRT`, `RRTstar`,
    /// `PRM` and `LazyPRM`, with or without a `kConfigDefault` (any `kConfig...`) suffix or a
    /// `geometric::` prefix; `None` for any other.
    pub fn from_ompl(id: &str) -> Option<PlannerId> {
        let base = id.rsplit("::").next().unwrap_or(id);
        let base = base.find("kConfig").map_or(base, |i| &base[..i]);
        match base {
            "RRTConnect" => Some(PlannerId::RrtConnect),
            "RRTstar" => Some(PlannerId::RrtStar),
            "RRT" => Some(PlannerId::Rrt),
            "PRM" => Some(PlannerId::Prm),
            "LazyPRM" => Some(PlannerId::LazyPrm),
            _ => None,
        }
    }

    /// The identifier used on the command line and in files.
    pub fn as_str(self) -> &'static str {
        match self {
            PlannerId::Prm => "prm",
            PlannerId::LazyPrm => "lazy_prm",
            PlannerId::Rrt => "rrt",
            PlannerId::RrtStar => "rrt_star",
            PlannerId::RrtConnect => "rrt_connect",
            PlannerId::Ptp => "ptp",
            PlannerId::Lin => "lin",
            PlannerId::Circ => "circ",
        }
    }
}

impl fmt::Display for PlannerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A planner name that is not one of [`PlannerId::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown planner '{0}' (expected one of prm, lazy_prm, rrt, rrt_star, rrt_connect, the \
     OMPL ids RRTConnect, RRT, RRTstar, PRM, LazyPRM, e.g. RRTConnectkConfigDefault, or the \
     Pilz motions PTP, LIN and CIRC)"
)]
pub struct UnknownPlanner(pub String);

impl FromStr for PlannerId {
    type Err = UnknownPlanner;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlannerId::ALL
            .into_iter()
            .chain(PlannerId::PILZ)
            .find(|p| p.as_str() == s || p.as_str().to_uppercase() == s)
            .or_else(|| PlannerId::from_ompl(s))
            .ok_or_else(|| UnknownPlanner(s.to_string()))
    }
}

/// A planning request.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanRequest {
    /// Start configuration (planning-group joint order).
    pub start: Vec<f64>,
    /// Goal configuration.
    pub goal: Vec<f64>,
    /// More goal configurations (a goal set, as MoveIt's several goal constraints or the
    /// configurations that reach a pose goal): the plan ends at `goal` or at any of these,
    /// whichever the planner reaches ([`PlanResult::reached_goal`]). RRT-Connect grows its
    /// goal tree from all of them at once (as OMPL does from a goal region's samples), PRM and
    /// lazy PRM take the shortest roadmap path to any of them, RRT and RRT* bias towards and
    /// connect to all of them (RRT*: the cheapest path to any), the device RRT-Connect races
    /// attempts towards all of them in one launch ([`device::DeviceProblem`]); PTP, the
    /// persistent roadmap and constrained planning plan to them one after another, each with
    /// a share of the time left ([`plan_each_goal`]). Each must
    /// be inside the joint limits; those in collision are left out while one is free.
    /// Empty by default.
    pub other_goals: Vec<Vec<f64>>,
    /// Planning group name (informational: the checker already works in the group's space).
    pub group: String,
    /// Which planner.
    pub planner: PlannerId,
    /// Wall-clock budget for planning (shortcutting and timing come after it).
    pub time_limit: Duration,
    /// Seed of the random generator.
    pub seed: u64,
    /// Motion-check resolution: joint-space distance between checked configurations.
    pub resolution: f64,
    /// Samples drawn (and checked together) per planner iteration; `None` (the default): the
    /// size [`suited_batch_size`] gives for the planner on the checker's backend, chosen when
    /// planning starts. Large batches keep a GPU busy; on the CPU, where a check costs in
    /// proportion to the configurations it visits, small ones waste less work. The path
    /// depends on it: the same request with the same batch size gives the same path on either
    /// backend (set it to compare backends).
    pub batch_size: Option<usize>,
    /// Stop after this many iterations (batches) even before the time limit. RRT* is anytime
    /// and otherwise runs until the time limit; set this for reproducible RRT* results.
    pub max_iterations: Option<usize>,
    /// Longest tree extension for the RRT family (joint-space distance); `None` = 0.2 times
    /// the diagonal of the joint space, for RRT-Connect at most 1 (see [`default_range`]).
    pub range: Option<f64>,
    /// Probability that an RRT / RRT* sample is the goal.
    pub goal_bias: f64,
    /// RRT-Connect: dynamic domain sampling (a sample farther from its nearest vertex than
    /// that vertex's radius, bounded once an extension from it has failed, is dropped
    /// unchecked; see the `rrt_connect` module), and with it shorter steps from vertices
    /// whose extensions keep failing. On by default, as in VAMP (the shorter steps are ours).
    pub dynamic_domain: bool,
    /// RRT-Connect with dynamic domains: the radius a vertex's domain gets at its first failed
    /// extension, in units of the range; `None` = [`default_dd_radius`] of the planning
    /// group's joint count.
    pub dd_radius: Option<f64>,
    /// RRT-Connect: a tree less than half the size of the other is extended again, while it
    /// grows, instead of the trees strictly taking turns. On by default (VAMP balances too).
    pub balance_trees: bool,
    /// Neighbours per PRM vertex; `None` = the PRM* rule `ceil(e (1 + 1/d) ln n)`, capped at
    /// [`prm::MAX_NEIGHBORS`].
    pub prm_neighbors: Option<usize>,
    /// Shortcutting rounds at most (0 disables shortcutting).
    pub shortcut_rounds: usize,
    /// Shortcutting stops after a round that shortened the path by less than this fraction
    /// of its length (0 = always run `shortcut_rounds` rounds). Default 0.005: on the MBM
    /// Panda problems the rounds after that point cost 3x the time for about 1 % of length.
    pub shortcut_min_gain: f64,
    /// Refinements of a shortcut's uncertain motions before it is given up
    /// ([`Checker::check_motions_refined`]; at most [`MAX_REFINEMENTS`], which checks them as
    /// the planner's own motions are). A shortcut that passes only at a finer level grazes an
    /// obstacle, and its refinements cost the most of shortcutting. Default
    /// [`SHORTCUT_REFINEMENTS`].
    pub shortcut_refinements: u32,
    /// RRT and RRT-Connect: independent attempts planned at once, one per CPU thread, all on
    /// the same checker (1 = a single attempt on the calling thread). Attempt 0 uses `seed`,
    /// the others seeds derived from it (see [`attempt_seed`]). The attempt that finds a path
    /// with the least work wins (its iterations plus the configurations it asked to check;
    /// ties: the lowest attempt); an attempt stops as soon as another has found a path with
    /// less work than it has done, so the result is the same for the same request whatever the
    /// threads' timing (unless the time limit ends the race). RRT* and the PRM planners run
    /// one attempt. At most [`MAX_ATTEMPTS`]. Attempt 0 first runs alone for
    /// [`Self::solo_work`].
    pub attempts: usize,
    /// With parallel attempts: the work (`Context::progress`: iterations plus configurations
    /// asked to be checked) attempt 0 does alone before the other attempts start, per sample of
    /// a batch (the solo phase lasts `solo_work * batch_size`: a batch of 64 samples asks for
    /// about 64 times the checks of one, so the same number of iterations); a path it finds
    /// within it is returned as a single attempt's would be. Default [`SOLO_WORK`].
    pub solo_work: u64,
    /// Fraction of the velocity limits the trajectory may use, in `(0, 1]`.
    pub vel_scale: f64,
    /// Fraction of the acceleration limits the trajectory may use, in `(0, 1]`.
    pub acc_scale: f64,
    /// Longest time between trajectory points, seconds.
    pub sample_dt: f64,
    /// Largest deviation (rad, joint space) from a waypoint of the shortcut path where the
    /// trajectory rounds the corner instead of stopping there ([`trajectory::rounded`], as
    /// MoveIt's time-optimal parameterization's `path_tolerance`); each arc is collision
    /// checked and narrowed where it collides. 0 (the default): stop at every waypoint. Not
    /// used with jerk limits (the timing then stops at every waypoint, jerk limited).
    pub path_tolerance: f64,
    /// Pose goals ([`pose`]): the share of `time_limit`, in (0, 1], past which no new batch of
    /// inverse kinematics starts begins once a collision-free goal configuration is known
    /// (the planner gets the rest). Default [`pose::IK_TIME_SHARE`].
    pub ik_time_share: f64,
    /// RRT-Connect: plan whole on the GPU (one launch for the whole planner, see
    /// [`device`]) instead of one host round trip per batch of checks. Needs a checker with a
    /// GPU ([`Checker::device_planner`]); off by default. The path is shortcut, timed and
    /// re-validated on the host as any other.
    pub on_device: bool,
    /// On the device: extra attempts for a problem that no attempt has solved within
    /// [`Self::device_escalate_after`] iterations ([`device::DeviceRrtcSettings::extra_attempts`];
    /// 0: none). `None`: [`device::DEVICE_EXTRA_ENV`] if set, else
    /// [`device::DEFAULT_EXTRA_PER_ATTEMPT`] per attempt.
    pub device_extra_attempts: Option<u32>,
    /// On the device: iterations without a path after which the extra attempts join
    /// ([`device::DeviceRrtcSettings::escalate_after`]). `None`: [`device::DEVICE_ESCALATE_ENV`]
    /// if set, else [`device::DEFAULT_ESCALATE_AFTER`].
    pub device_escalate_after: Option<u32>,
}

impl PlanRequest {
    /// The goal set: `goal`, then `other_goals`, in that order (index 0 is `goal`, as in
    /// [`PlanResult::reached_goal`]).
    pub fn goals(&self) -> impl Iterator<Item = &Vec<f64>> {
        std::iter::once(&self.goal).chain(&self.other_goals)
    }

    /// A request with default options: 5 s, seed 0, resolution 0.02, batches suited to the
    /// planner and backend, goal bias 0.05, dynamic domain and tree balance on (RRT-Connect),
    /// up to 20 shortcut rounds (stopping once a round gains less than 0.5 %), full velocity
    /// and acceleration limits, 20 ms samples.
    pub fn new(start: Vec<f64>, goal: Vec<f64>, planner: PlannerId) -> Self {
        Self {
            start,
            goal,
            other_goals: Vec::new(),
            group: String::new(),
            planner,
            time_limit: Duration::from_secs(5),
            seed: 0,
            resolution: 0.02,
            batch_size: None,
            max_iterations: None,
            range: None,
            goal_bias: 0.05,
            dynamic_domain: true,
            dd_radius: None,
            balance_trees: true,
            prm_neighbors: None,
            shortcut_rounds: 20,
            shortcut_min_gain: 0.005,
            shortcut_refinements: SHORTCUT_REFINEMENTS,
            attempts: 1,
            solo_work: SOLO_WORK,
            vel_scale: 1.0,
            acc_scale: 1.0,
            sample_dt: 0.02,
            path_tolerance: 0.0,
            ik_time_share: pose::IK_TIME_SHARE,
            on_device: false,
            device_extra_attempts: None,
            device_escalate_after: None,
        }
    }

    /// The batch size planning with a checker of `backend` uses: [`Self::batch_size`], or when
    /// that is `None` [`suited_batch_size`] of the planner and `backend`.
    pub fn batch_size_on(&self, backend: Backend) -> usize {
        self.batch_size
            .unwrap_or_else(|| suited_batch_size(self.planner, backend))
    }

    /// The batch size inside a planner: [`run`] resolves [`Self::batch_size`] before any
    /// planner reads it (the default only for requests that did not pass through it).
    pub(crate) fn batch(&self) -> usize {
        self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE)
    }
}

/// A batch size that suits `planner` on `backend`: 1 for RRT-Connect on the CPU (each sample
/// extends a tree before the next is drawn, as in the original algorithm; a batch extends
/// towards samples the earlier ones of the batch made unnecessary, and every check is paid
/// in full on the CPU), the default 64 otherwise (the GPU wants many checks per launch).
/// Measured on the MotionBenchMaker Panda problems (`results/mbm/NOTES.md`); the other
/// planners keep the default until measured.
pub fn suited_batch_size(planner: PlannerId, backend: Backend) -> usize {
    match (planner, backend) {
        (PlannerId::RrtConnect, Backend::Cpu | Backend::Hybrid) => 1,
        _ => DEFAULT_BATCH_SIZE,
    }
}

/// Default [`PlanRequest::shortcut_refinements`]: up to 8 times a shortcut's segments instead
/// of 64. On the MBM sphere models (10 problems per scene, callgrind on the dev box) planning
/// and simplification together took 20 % fewer instructions for Panda and 16 % fewer for UR5,
/// for paths 0.9 % and 0.5 % longer after simplification (2 refinements: -26 % and +2.4 %
/// for Panda; 1: -31 % and +5.4 %); Fetch (10 per scene, timed, two rounds): simplification
/// median 4.3 / 3.5 -> 3.0 / 2.9 ms, paths 1.1 % longer, the same problems solved. The greedy
/// waypoint reduction before the random rounds takes the same cap (Panda another -4 %
/// instructions, UR5 -0.3 %, lengths within 1 %): all told -24 % (Panda) and -16 % (UR5)
/// against 6 refinements, for paths -0.2 % and +0.3 % long.
pub const SHORTCUT_REFINEMENTS: u32 = 3;

/// The batch size [`suited_batch_size`] gives where it has no other measurement.
pub const DEFAULT_BATCH_SIZE: usize = 64;

/// Counters and timings of one planning run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlanStats {
    /// Time spent planning (until a first path for most planners, the whole budget for RRT*).
    pub planning_time: Duration,
    /// Time spent shortcutting, timing and re-validating.
    pub simplification_time: Duration,
    /// Configurations checked: single configurations plus every step of every motion asked
    /// for, at the requested resolution. A backend may visit fewer (a motion check stops at
    /// the first colliding configuration) or more (a motion grazing an obstacle is
    /// re-checked at finer steps); [`Checker::configs_evaluated`] counts those.
    pub collision_checks: u64,
    /// Configurations checked on their own.
    pub configs_checked: u64,
    /// Motions checked.
    pub motions_checked: u64,
    /// Calls to `check_configs`.
    pub config_batches: u64,
    /// Calls to `check_motions`.
    pub motion_batches: u64,
    /// Length of the raw path.
    pub path_length_before: f64,
    /// Length of the returned (shortcut) path.
    pub path_length_after: f64,
    /// Vertices of the roadmap or trees when planning ended.
    pub roadmap_vertices: usize,
    /// Edges of the roadmap or trees when planning ended.
    pub roadmap_edges: usize,
    /// Planner iterations (batches).
    pub iterations: usize,
    /// RRT*: (seconds since start, best solution cost) each time the best cost improved.
    pub cost_over_time: Vec<(f64, f64)>,
    /// Attempts that ran ([`PlanRequest::attempts`] once the others started; 1 when attempt 0
    /// found its path within [`PlanRequest::solo_work`], and for the planners that run one).
    pub attempts: usize,
    /// The attempt whose path was returned (0 with a single attempt).
    pub winning_attempt: usize,
    /// Samples per planner iteration ([`PlanRequest::batch_size`]).
    pub batch_size: usize,
    /// Planning on the device ([`PlanRequest::on_device`]): the launch's time on the device's
    /// clock (the longest attempt's, from its block's start to its end); the rest of
    /// `planning_time` is the host's (checks of start and goal, copies, the launch itself).
    pub device_time: Option<Duration>,
}

/// A successful plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanResult {
    /// Which planner produced it.
    pub planner: PlannerId,
    /// Waypoints after shortcutting, from the start to the goal.
    pub path: Vec<Vec<f64>>,
    /// Waypoints as the planner found them.
    pub raw_path: Vec<Vec<f64>>,
    /// The timed trajectory along `path`.
    pub trajectory: Trajectory,
    /// How `path` was timed into `trajectory` (to time it again).
    pub timing: trajectory::PathTiming,
    /// Which goal the plan ends at: 0 for the request's `goal`, `k` for its
    /// `other_goals[k - 1]`.
    pub reached_goal: usize,
    /// Counters and timings.
    pub stats: PlanStats,
}

/// Why planning failed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The start configuration is unusable.
    #[error("invalid start: {0}")]
    InvalidStart(String),
    /// The goal configuration is unusable.
    #[error("invalid goal: {0}")]
    InvalidGoal(String),
    /// The start configuration is outside the path constraints.
    #[error("invalid start: {0}")]
    StartViolatesConstraints(String),
    /// The goal configuration is outside the path constraints.
    #[error("invalid goal: {0}")]
    GoalViolatesConstraints(String),
    /// No configuration reaches a pose goal (inverse kinematics found none within the joint
    /// limits and the goal's tolerances).
    #[error("no inverse kinematics solution: {0}")]
    NoIkSolution(String),
    /// A request option is unusable.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The joint space cannot be planned in.
    #[error("invalid joint space: {0}")]
    InvalidSpace(String),
    /// No path was found within the limits.
    #[error("no path found by {planner} within {time_limit:?} ({iterations} iterations, {vertices} vertices)")]
    NoPath {
        /// The planner.
        planner: PlannerId,
        /// The time limit of the request.
        time_limit: Duration,
        /// Iterations run.
        iterations: usize,
        /// Vertices in the roadmap or trees.
        vertices: usize,
    },
    /// A Pilz motion (PTP, LIN) cannot be made: it plans no detour.
    #[error("{planner}: {reason}")]
    Blocked {
        /// The motion.
        planner: PlannerId,
        /// Why, e.g. the straight motion collides.
        reason: String,
    },
    /// A persistent roadmap was built for a different joint space than the checker's.
    #[error("the roadmap was built for joints [{roadmap}] but the checker plans for [{checker}]")]
    RoadmapMismatch {
        /// Joint names of the roadmap.
        roadmap: String,
        /// Joint names of the checker.
        checker: String,
    },
    /// The found path failed the final re-validation (a checker inconsistency).
    #[error("the path failed the final re-validation: {0}")]
    ValidationFailed(TrajectoryError),
    /// The collision checker failed.
    #[error("collision checker: {0}")]
    Checker(#[from] CollisionError),
    /// Time parameterization failed.
    #[error("trajectory: {0}")]
    Trajectory(#[from] TrajectoryError),
    /// Neighbour search failed.
    #[error("neighbour search: {0}")]
    Neighbors(#[from] NnError),
    /// Roadmap editing failed.
    #[error("roadmap: {0}")]
    Roadmap(#[from] RoadmapError),
}

/// A [`Checker`] wrapper that counts the work passed to it.
pub struct CountingChecker<'a> {
    inner: &'a dyn Checker,
    configs: AtomicU64,
    motions: AtomicU64,
    motion_steps: AtomicU64,
    config_calls: AtomicU64,
    motion_calls: AtomicU64,
}

impl<'a> CountingChecker<'a> {
    /// Wraps `inner` with all counters at zero.
    pub fn new(inner: &'a dyn Checker) -> Self {
        Self {
            inner,
            configs: AtomicU64::new(0),
            motions: AtomicU64::new(0),
            motion_steps: AtomicU64::new(0),
            config_calls: AtomicU64::new(0),
            motion_calls: AtomicU64::new(0),
        }
    }

    /// Configurations asked to be checked so far: single ones plus every step of every motion.
    pub fn work(&self) -> u64 {
        self.configs.load(Ordering::Relaxed) + self.motion_steps.load(Ordering::Relaxed)
    }

    /// Counts a configuration call of `configs` made for this checker's plan through another
    /// checker (one call shared by several plans, see [`batch::plan_many`]).
    pub(crate) fn count_configs(&self, configs: u64) {
        self.config_calls.fetch_add(1, Ordering::Relaxed);
        self.configs.fetch_add(configs, Ordering::Relaxed);
    }

    /// Writes the counters into `stats`.
    pub fn fill(&self, stats: &mut PlanStats) {
        stats.configs_checked = self.configs.load(Ordering::Relaxed);
        stats.motions_checked = self.motions.load(Ordering::Relaxed);
        stats.collision_checks = stats.configs_checked + self.motion_steps.load(Ordering::Relaxed);
        stats.config_batches = self.config_calls.load(Ordering::Relaxed);
        stats.motion_batches = self.motion_calls.load(Ordering::Relaxed);
    }
}

impl Checker for CountingChecker<'_> {
    fn space(&self) -> &JointSpace {
        self.inner.space()
    }

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        self.inner.contacts(q)
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        self.config_calls.fetch_add(1, Ordering::Relaxed);
        self.configs
            .fetch_add(configs.len() as u64, Ordering::Relaxed);
        self.inner.check_configs(configs)
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        self.motion_calls.fetch_add(1, Ordering::Relaxed);
        self.motions
            .fetch_add(motions.len() as u64, Ordering::Relaxed);
        let space = self.inner.space();
        let steps: u64 = (0..motions.len().min(motions.to.len()))
            .map(|i| space.segments(motions.from.row(i), motions.to.row(i), resolution) as u64 + 1)
            .sum();
        self.motion_steps.fetch_add(steps, Ordering::Relaxed);
        self.inner
            .check_motions_refined(motions, resolution, max_refinements)
    }

    fn backend(&self) -> Backend {
        self.inner.backend()
    }

    fn configs_evaluated(&self) -> Option<u64> {
        self.inner.configs_evaluated()
    }

    fn device_planner(&self) -> Option<&dyn device::DevicePlanner> {
        self.inner.device_planner()
    }
}

/// What a planner hands back before shortcutting and timing.
pub(crate) struct RawSolution {
    pub path: Vec<Vec<f64>>,
    pub iterations: usize,
    pub vertices: usize,
    pub edges: usize,
    pub cost_over_time: Vec<(f64, f64)>,
}

/// Shared state of one planning run.
pub(crate) struct Context<'c, 'r> {
    pub checker: &'c CountingChecker<'c>,
    pub space: JointSpace,
    pub req: &'r PlanRequest,
    pub rng: ChaCha8Rng,
    pub started: Instant,
    pub deadline: Instant,
    /// With parallel attempts ([`race`]): the race and this attempt's number.
    pub race: Option<(&'c Race, usize)>,
    /// Attempt 0 of a race runs alone until its progress passes this much work; then it calls
    /// this to start the other attempts.
    pub solo: Option<(u64, &'c (dyn Fn() + Sync))>,
    /// Set by [`race`]: (attempts run, the winning attempt).
    pub attempts_run: (usize, usize),
    /// Work done on the device by a device planner ([`device`]): (motions, configurations).
    pub device_work: (u64, u64),
    /// A device planner's time on the device's clock ([`device::DeviceOutcome::device_us`]).
    pub device_time: Option<Duration>,
}

impl Context<'_, '_> {
    pub fn timed_out(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// True when the planner must stop: time is up or `iterations` reached `max_iterations`.
    pub fn must_stop(&self, iterations: usize) -> bool {
        self.beaten(iterations)
            || self.timed_out()
            || self.req.max_iterations.is_some_and(|m| iterations >= m)
    }

    /// With parallel attempts: another attempt found a path with less progress
    /// ([`Self::progress`]) than this one can have after `iterations` and one more (or as
    /// much, with a lower attempt number).
    pub fn beaten(&self, iterations: usize) -> bool {
        let Some((race, attempt)) = self.race else {
            return false;
        };
        let progress = self.progress(iterations + 1);
        if let Some((work, start_others)) = self.solo {
            if progress > work && !race.joined.swap(true, Ordering::AcqRel) {
                start_others();
            }
        }
        race.beaten(progress, attempt)
    }

    /// The work of this run after `iterations`: the iterations plus the configurations asked
    /// to be checked (single ones and every step of every motion at the request's
    /// resolution). It grows with the time a run takes, iterations that draw a sample and drop
    /// it unchecked included, and depends only on the run's own choices.
    pub fn progress(&self, iterations: usize) -> u64 {
        self.checker.work().saturating_add(iterations as u64)
    }

    /// [`Self::must_stop`] that reads the clock only when `clock_due` (the iteration
    /// count is checked every time). Planners whose iterations are mostly too cheap to be
    /// worth a clock read (an RRT-Connect sample dropped by its dynamic domain costs about as
    /// much as the read) pass `true` after every iteration that checked a motion and every
    /// [`CLOCK_EVERY`] iterations otherwise: the limit is then overrun by at most that many
    /// unchecked iterations.
    pub fn must_stop_lazily(&self, iterations: usize, clock_due: bool) -> bool {
        self.req.max_iterations.is_some_and(|m| iterations >= m)
            || self.beaten(iterations)
            || (clock_due && self.timed_out())
    }

    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub fn no_path(&self, iterations: usize, vertices: usize) -> PlanError {
        PlanError::NoPath {
            planner: self.req.planner,
            time_limit: self.req.time_limit,
            iterations,
            vertices,
        }
    }

    /// A uniform sample inside the joint limits (continuous joints in `[-PI, PI]`).
    pub fn sample(&mut self) -> Vec<f64> {
        let mut q = Vec::with_capacity(self.space.dof());
        self.sample_into(&mut q);
        q
    }

    /// [`Self::sample`] into `q` (the same draws, no allocation once `q` has grown).
    pub fn sample_into(&mut self, q: &mut Vec<f64>) {
        let space = &self.space;
        q.clear();
        for j in 0..space.dof() {
            let (lo, hi) = bounds(space, j);
            q.push(self.rng.random_range(lo..=hi));
        }
    }

    /// Draws `n` samples and keeps the collision-free ones (one batched check).
    pub fn valid_samples(&mut self, n: usize) -> Result<Vec<Vec<f64>>, PlanError> {
        let dof = self.space.dof();
        let mut batch = ConfigBatch::with_capacity(dof, n);
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let q = self.sample();
            batch.push(&q)?;
            samples.push(q);
        }
        let verdicts = self.checker.check_configs(&batch)?;
        Ok(samples
            .into_iter()
            .zip(verdicts)
            .filter_map(|(q, ok)| ok.then_some(q))
            .collect())
    }

    /// Longest extension of the RRT family.
    pub fn range(&self) -> f64 {
        self.req
            .range
            .unwrap_or_else(|| default_range(self.req.planner, &self.space))
    }

    /// The request's dynamic-domain radius factor ([`PlanRequest::dd_radius`] or the default).
    pub fn dd_radius(&self) -> f64 {
        self.req
            .dd_radius
            .unwrap_or_else(|| default_dd_radius(self.space.dof()))
    }

    /// `to`, or the point at distance `range` from `from` towards it.
    pub fn steer(&self, from: &[f64], to: &[f64], range: f64) -> Vec<f64> {
        let d = self.space.distance(from, to);
        if d <= range {
            return to.to_vec();
        }
        let mut out = vec![0.0; from.len()];
        self.space.interpolate(from, to, range / d, &mut out);
        out
    }
}

/// See `Context::must_stop_lazily`.
pub const CLOCK_EVERY: usize = 32;

/// Largest [`PlanRequest::attempts`].
pub const MAX_ATTEMPTS: usize = 256;

/// Parallel attempts: attempt 0 runs alone until it has done this much work
/// (`Context::progress`); only a run that needs more starts the other attempts. Easy problems
/// then pay nothing for the threads.
pub const SOLO_WORK: u64 = 20_000;

/// The shared state of parallel attempts: the smallest (progress, attempt) key of a path found
/// so far (`u64::MAX` before any), and whether attempt 0's solo phase is over.
pub(crate) struct Race {
    best: AtomicU64,
    /// The other attempts have been started (attempt 0's solo phase is over).
    joined: AtomicBool,
}

impl Race {
    fn new() -> Self {
        Self {
            best: AtomicU64::new(u64::MAX),
            joined: AtomicBool::new(false),
        }
    }

    /// Orders (progress, attempt) pairs ([`Context::progress`]): less progress first, then the
    /// lower attempt.
    fn key(progress: u64, attempt: usize) -> u64 {
        (progress.min(u64::MAX >> 16) << 16) | attempt as u64
    }

    /// A path found by `attempt` with progress `progress` or more would lose to one already
    /// found.
    fn beaten(&self, progress: u64, attempt: usize) -> bool {
        self.best.load(Ordering::Acquire) < Self::key(progress, attempt)
    }

    /// `attempt` found a path with progress `progress`.
    fn offer(&self, progress: u64, attempt: usize) {
        self.best
            .fetch_min(Self::key(progress, attempt), Ordering::AcqRel);
    }
}

/// The seed of attempt `attempt` of a request seeded with `seed` (attempt 0: `seed` itself).
pub fn attempt_seed(seed: u64, attempt: usize) -> u64 {
    if attempt == 0 {
        seed
    } else {
        seed ^ (attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// Runs `solve` as [`PlanRequest::attempts`] parallel attempts (see there) on scoped threads,
/// attempt 0 on the calling thread, and returns the winner's solution. With one attempt, or
/// for RRT*, runs `solve` on `ctx` alone.
pub(crate) fn race(
    ctx: &mut Context<'_, '_>,
    solve: fn(&mut Context<'_, '_>) -> Result<RawSolution, PlanError>,
) -> Result<RawSolution, PlanError> {
    let attempts = ctx.req.attempts;
    if attempts <= 1 || ctx.req.planner == PlannerId::RrtStar {
        return solve(ctx);
    }
    let shared = Race::new();
    let (checker, req, started, deadline) = (ctx.checker, ctx.req, ctx.started, ctx.deadline);
    let space = &ctx.space;
    let attempt = |a: usize, solo: Option<(u64, &(dyn Fn() + Sync))>| {
        // The attempt's own counter: its progress is its iterations plus the configurations it
        // asked to check (deterministic for the attempt, unlike the shared checker's counts).
        let counter = CountingChecker::new(checker);
        let mut actx = Context {
            checker: &counter,
            space: space.clone(),
            req,
            rng: ChaCha8Rng::seed_from_u64(attempt_seed(req.seed, a)),
            started,
            deadline,
            race: Some((&shared, a)),
            solo,
            device_work: (0, 0),
            device_time: None,
            attempts_run: (1, 0),
        };
        let r = solve(&mut actx);
        let progress = match &r {
            Ok(raw) => actx.progress(raw.iterations),
            Err(_) => u64::MAX,
        };
        if r.is_ok() {
            shared.offer(progress, a);
        }
        (progress, r)
    };
    let results: Vec<(u64, Result<RawSolution, PlanError>)> = std::thread::scope(|s| {
        let others = Mutex::new(Vec::new());
        let start_others = || {
            if let Ok(mut h) = others.lock() {
                for a in h.len() + 1..attempts {
                    let attempt = &attempt;
                    h.push(s.spawn(move || attempt(a, None)));
                }
            }
        };
        let solo = solo_budget(req.solo_work, req.batch());
        let mut all = vec![attempt(0, Some((solo, &start_others)))];
        let handles = others.into_inner().unwrap_or_default();
        for h in handles {
            match h.join() {
                Ok(r) => all.push(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    let ran = results.len();
    let (mut iterations, mut vertices) = (0, 0);
    let mut won: Option<(u64, usize, RawSolution)> = None;
    for (a, (progress, r)) in results.into_iter().enumerate() {
        match r {
            Ok(raw) => {
                let key = Race::key(progress, a);
                if won.as_ref().is_none_or(|(best, _, _)| key < *best) {
                    won = Some((key, a, raw));
                }
            }
            Err(PlanError::NoPath {
                iterations: i,
                vertices: v,
                ..
            }) => {
                iterations += i;
                vertices += v;
            }
            Err(e) => return Err(e),
        }
    }
    match won {
        Some((_, a, raw)) => {
            ctx.attempts_run = (ran, a);
            Ok(raw)
        }
        None => Err(ctx.no_path(iterations, vertices)),
    }
}

/// The work attempt 0 does alone in a race: [`PlanRequest::solo_work`] per sample of a batch.
fn solo_budget(solo_work: u64, batch_size: usize) -> u64 {
    solo_work.saturating_mul(batch_size.max(1) as u64)
}

/// Sampling bounds of joint `j`.
pub(crate) fn bounds(space: &JointSpace, j: usize) -> (f64, f64) {
    if space.continuous.get(j).copied().unwrap_or(false) {
        (-std::f64::consts::PI, std::f64::consts::PI)
    } else {
        (
            space.lower.get(j).copied().unwrap_or(0.0),
            space.upper.get(j).copied().unwrap_or(0.0),
        )
    }
}

/// Longest default RRT-Connect extension (joint-space distance, rad or m). Measured on the
/// MotionBenchMaker problems (10 per scene, Panda, UR5, Fetch, seeds 0 and 1;
/// `results/mbm/NOTES.md`): 1.0 solved 56 + 56 Fetch and 62 + 62 UR5 problems where 0.2 times
/// the diagonal (2.65 for Fetch, 6.2 for UR5) solved 52 + 47 and 61 + 60, Panda 70 + 70 with
/// either (VAMP's fixed 2.0: 52, 61, 70 with seed 0).
pub const RRT_CONNECT_MAX_DEFAULT_RANGE: f64 = 1.0;

/// Dynamic-domain radius factor (radius at a vertex's first failed extension, in units of
/// the range) for planning groups of at most this many joints: [`DD_RADIUS_SMALL`] up to it,
/// [`DD_RADIUS_LARGE`] above.
pub const DD_RADIUS_MAX_SMALL_DOF: usize = 7;
/// [`default_dd_radius`] of groups of at most [`DD_RADIUS_MAX_SMALL_DOF`] joints. Measured on
/// the MotionBenchMaker problems with the sphere models (2-core dev box, 30 per scene, seed 0;
/// `results/mbm/NOTES.md`, session 22): against 2, planning median and mean Panda 0.51 / 1.78
/// -> 0.27 / 0.89 ms, UR5 0.61 / 1.96 -> 0.32 / 0.81 ms, the same problems solved; 2.5 and 4
/// were slower than 3 on both.
pub const DD_RADIUS_SMALL: f64 = 3.0;
/// [`default_dd_radius`] of larger groups (VAMP's: radius 4 at range 2). On the 8-joint
/// Fetch (10 per scene, seeds 0 and 1), 3 lowered the planning median (9.3 -> 7.2 and 9.5 ->
/// 5.9 ms) but raised the mean (26.6 -> 44.5 and 31.3 -> 43.1 ms) and the 95th percentile
/// (126 -> 169 and 78 -> 230 ms): the larger the space's dimension, the more a wider domain
/// lets in (the volume grows as the radius to the power of the dimension), and each Fetch
/// check costs more.
pub const DD_RADIUS_LARGE: f64 = 2.0;

/// The dynamic-domain radius factor of a request without `dd_radius`, by the planning
/// group's joint count (see [`DD_RADIUS_SMALL`]).
pub fn default_dd_radius(dof: usize) -> f64 {
    if dof <= DD_RADIUS_MAX_SMALL_DOF {
        DD_RADIUS_SMALL
    } else {
        DD_RADIUS_LARGE
    }
}

/// The extension range a request without `range` gets: 0.2 times the joint-space diagonal
/// (OMPL's rule), for RRT-Connect at most [`RRT_CONNECT_MAX_DEFAULT_RANGE`].
pub fn default_range(planner: PlannerId, space: &JointSpace) -> f64 {
    let r = 0.2 * space_diagonal(space);
    if planner == PlannerId::RrtConnect {
        r.min(RRT_CONNECT_MAX_DEFAULT_RANGE)
    } else {
        r
    }
}

/// Length of the diagonal of the joint space (continuous joints count `PI`, the largest
/// wrapped difference).
pub fn space_diagonal(space: &JointSpace) -> f64 {
    (0..space.dof())
        .map(|j| {
            let w = if space.continuous.get(j).copied().unwrap_or(false) {
                std::f64::consts::PI
            } else {
                let (lo, hi) = bounds(space, j);
                hi - lo
            };
            w * w
        })
        .sum::<f64>()
        .sqrt()
}

/// Lebesgue measure of the joint space (continuous joints span `2 PI`).
pub fn space_volume(space: &JointSpace) -> f64 {
    (0..space.dof())
        .map(|j| {
            let (lo, hi) = bounds(space, j);
            hi - lo
        })
        .product()
}

fn check_space(space: &JointSpace) -> Result<(), PlanError> {
    let d = space.dof();
    if d == 0 || d > crate::roadmap::MAX_DOF {
        return Err(PlanError::InvalidSpace(format!(
            "planners support 1 to {} joints, the planning group has {d}",
            crate::roadmap::MAX_DOF
        )));
    }
    if space.lower.len() != d
        || space.upper.len() != d
        || space.continuous.len() != d
        || space.max_velocity.len() != d
        || space.max_acceleration.len() != d
    {
        return Err(PlanError::InvalidSpace(
            "joint names, limits, continuity and velocity/acceleration limits differ in length"
                .into(),
        ));
    }
    for j in 0..d {
        let (lo, hi) = bounds(space, j);
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Err(PlanError::InvalidSpace(format!(
                "joint '{}' has unusable limits [{lo}, {hi}]",
                space.names[j]
            )));
        }
    }
    Ok(())
}

/// Checks a request's options (not its start and goal): the error every plan of it would
/// give, for callers that want it once before many plans ([`plan_many`]).
pub fn check_request(req: &PlanRequest) -> Result<(), PlanError> {
    let bad = |m: String| Err(PlanError::InvalidRequest(m));
    if !(req.resolution > 0.0 && req.resolution.is_finite()) {
        return bad(format!(
            "resolution must be positive and finite, got {}",
            req.resolution
        ));
    }
    if req.batch_size == Some(0) {
        return bad("batch_size must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&req.goal_bias) {
        return bad(format!(
            "goal_bias must be in [0, 1], got {}",
            req.goal_bias
        ));
    }
    for (name, value) in [("range", req.range), ("dd_radius", req.dd_radius)] {
        if let Some(r) = value.filter(|r| !(*r > 0.0 && r.is_finite())) {
            return bad(format!("{name} must be positive and finite, got {r}"));
        }
    }
    if req.prm_neighbors == Some(0) {
        return bad("prm_neighbors must be at least 1".into());
    }
    for (name, v) in [("vel_scale", req.vel_scale), ("acc_scale", req.acc_scale)] {
        if !(v > 0.0 && v <= 1.0) {
            return bad(format!("{name} must be in (0, 1], got {v}"));
        }
    }
    if !(1..=MAX_ATTEMPTS).contains(&req.attempts) {
        return bad(format!(
            "attempts must be in 1..={MAX_ATTEMPTS}, got {}",
            req.attempts
        ));
    }
    if req.shortcut_refinements > MAX_REFINEMENTS {
        return bad(format!(
            "shortcut_refinements must be at most {MAX_REFINEMENTS}, got {}",
            req.shortcut_refinements
        ));
    }
    if !(0.0..1.0).contains(&req.shortcut_min_gain) {
        return bad(format!(
            "shortcut_min_gain must be in [0, 1), got {}",
            req.shortcut_min_gain
        ));
    }
    if !(req.sample_dt > 0.0 && req.sample_dt.is_finite()) {
        return bad(format!(
            "sample_dt must be positive and finite, got {}",
            req.sample_dt
        ));
    }
    if !(req.path_tolerance >= 0.0 && req.path_tolerance.is_finite()) {
        return bad(format!(
            "path_tolerance must be finite and at least 0, got {}",
            req.path_tolerance
        ));
    }
    Ok(())
}

/// Re-validates `path` at the request's resolution and times it; returns the trajectory and
/// how it was timed.
///
/// - With a [`PlanRequest::path_tolerance`] (and no jerk limits) the corners are rounded
///   ([`trajectory::rounded::round_corners`]: the arcs checked in one batched call) and the
///   trajectory is re-validated as straight motions between its points
///   ([`trajectory::PathTiming::validate`]).
/// - Where that timing fails, its re-validation fails or it is no quicker, and without a
///   tolerance, the trajectory stops at every waypoint: every motion of the path is checked
///   again (one batched check; [`trajectory::validate_along`]) and the trajectory's points
///   are checked to lie on those motions in order, so every motion between two consecutive
///   points is part of a motion found free.
fn finish(
    checker: &dyn Checker,
    req: &PlanRequest,
    path: &[Vec<f64>],
) -> Result<(Trajectory, trajectory::PathTiming), TrajectoryError> {
    let space = checker.space();
    let stops = trajectory::PathTiming::Stops {
        vel_scale: req.vel_scale,
        acc_scale: req.acc_scale,
        sample_dt: req.sample_dt,
    };
    let stopping = stops.time(space, path, None)?;
    if req.path_tolerance > 0.0 && trajectory::rounded::jerk_limited(space).is_none() {
        let corners =
            trajectory::rounded::round_corners(checker, path, req.path_tolerance, req.resolution)?;
        let timing = trajectory::PathTiming::Rounded {
            vel_scale: req.vel_scale,
            acc_scale: req.acc_scale,
            sample_dt: req.sample_dt,
            corners,
        };
        // Rounded only where it is quicker (a path without corners times the same stopping).
        match timing.time(space, path, None) {
            Ok(traj) if traj.duration() < stopping.duration() => {
                match timing.validate(checker, path, &traj, req.resolution) {
                    Ok(()) => return Ok((traj, timing)),
                    Err(TrajectoryError::Checker(e)) => return Err(e.into()),
                    Err(_) => {}
                }
            }
            _ => {}
        }
    }
    trajectory::validate_along(checker, path, &stopping, req.resolution)?;
    Ok((stopping, stops))
}

/// Plans with a fresh planner (PRM variants start from an empty roadmap; keep a
/// [`prm::Prm`] to reuse one across queries).
pub fn plan(checker: &dyn Checker, req: &PlanRequest) -> Result<PlanResult, PlanError> {
    if req.on_device && req.planner != PlannerId::RrtConnect {
        return Err(PlanError::InvalidRequest(format!(
            "on_device: only rrt_connect runs on the device, not {}",
            req.planner
        )));
    }
    if !req.other_goals.is_empty() && !grows_goal_sets(req) {
        return plan_each_goal(checker.space(), req, |one| plan(checker, one));
    }
    match req.planner {
        PlannerId::Prm | PlannerId::LazyPrm => {
            check_space(checker.space())?;
            prm::Prm::new(checker.space())?.solve(checker, req)
        }
        PlannerId::Rrt | PlannerId::RrtStar => run(checker, req, |ctx| race(ctx, rrt::solve)),
        PlannerId::RrtConnect if req.on_device => run(checker, req, device::solve),
        PlannerId::RrtConnect => run(checker, req, |ctx| race(ctx, rrt_connect::solve)),
        PlannerId::Ptp => run(checker, req, pilz::ptp),
        PlannerId::Lin | PlannerId::Circ => Err(PlanError::InvalidRequest(format!(
            "{} moves a link along a line or an arc and needs the robot's kinematics: plan it \
             with the planning service or gmp plan",
            req.planner
        ))),
    }
}

/// Whether [`plan`] plans `req`'s goal set at once (RRT-Connect on the host grows its goal
/// tree from every goal, on the device it races attempts towards every goal in one launch;
/// PRM and lazy PRM search the shortest path to any goal of their roadmap; RRT and RRT* bias
/// towards and connect to every goal, RRT* keeping the cheapest path to any) rather than one
/// goal after another ([`plan_each_goal`]: PTP).
pub fn grows_goal_sets(req: &PlanRequest) -> bool {
    match req.planner {
        PlannerId::RrtConnect => true,
        PlannerId::Prm | PlannerId::LazyPrm | PlannerId::Rrt | PlannerId::RrtStar => true,
        PlannerId::Ptp | PlannerId::Lin | PlannerId::Circ => false,
    }
}

/// Goals of a goal set that [`plan_each_goal`] shares the time left between: each goal in
/// turn gets `left / min(goals still to try, GOALS_IN_TURN)`, so the first goals get a fair
/// share and the later ones what a quick failure (a goal in collision, a blocked PTP) leaves.
pub const GOALS_IN_TURN: usize = 3;

/// Plans to the goals of `req` (`goal`, then `other_goals`; a goal equal to the start first)
/// one after another with `plan_one`, each a request with that one goal and a share of the
/// time left ([`GOALS_IN_TURN`]), until one is reached or the time is spent; the result's
/// `reached_goal` names it and its planning time includes the goals tried before. Every goal
/// must be inside the joint limits of `space` (else the error names it and nothing is
/// planned). A goal that cannot be reached (no path, blocked, in collision) passes the turn;
/// when none is reached, the error of the first goal in collision if all tried were, else the
/// last failure.
pub fn plan_each_goal(
    space: &JointSpace,
    req: &PlanRequest,
    mut plan_one: impl FnMut(&PlanRequest) -> Result<PlanResult, PlanError>,
) -> Result<PlanResult, PlanError> {
    let started = Instant::now();
    check_goal_set(space, req)?;
    let mut goals: Vec<(usize, &Vec<f64>)> = req.goals().enumerate().collect();
    // A goal where the start already is comes first: reached without moving.
    if let Some(at) = goals
        .iter()
        .position(|(_, g)| space.distance(&req.start, g) == 0.0)
    {
        let here = goals.remove(at);
        goals.insert(0, here);
    }
    let mut in_collision = None;
    let mut last = None;
    for (turn, &(k, goal)) in goals.iter().enumerate() {
        let left = req.time_limit.saturating_sub(started.elapsed());
        if turn > 0 && left.is_zero() {
            break;
        }
        let share = left / (goals.len() - turn).min(GOALS_IN_TURN) as u32;
        let one = PlanRequest {
            goal: goal.to_vec(),
            other_goals: Vec::new(),
            time_limit: share.max(Duration::from_millis(1)),
            ..req.clone()
        };
        let before = started.elapsed();
        match plan_one(&one) {
            Ok(mut result) => {
                result.reached_goal = k;
                result.stats.planning_time += before;
                return Ok(result);
            }
            Err(e @ PlanError::InvalidGoal(_)) => {
                in_collision.get_or_insert(e);
            }
            Err(e @ (PlanError::NoPath { .. } | PlanError::Blocked { .. })) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last
        .or(in_collision)
        .unwrap_or_else(|| PlanError::InvalidGoal("the goal set has no goal".into())))
}

/// Every goal of `req`'s goal set inside the joint limits of `space`, else the error naming
/// the first that is not (`goal` or `other_goals[i]`).
pub(crate) fn check_goal_set(space: &JointSpace, req: &PlanRequest) -> Result<(), PlanError> {
    space.validate(&req.goal).map_err(PlanError::InvalidGoal)?;
    for (i, g) in req.other_goals.iter().enumerate() {
        space
            .validate(g)
            .map_err(|e| PlanError::InvalidGoal(format!("other_goals[{i}]: {e}")))?;
    }
    Ok(())
}

/// Which goal of `req`'s goal set `path` ends at, and that goal: the one nearest its last
/// waypoint (a planner's path ends exactly at one), 0 for `goal`, `k` for
/// `other_goals[k - 1]`.
fn goal_reached<'r>(
    space: &JointSpace,
    req: &'r PlanRequest,
    path: &[Vec<f64>],
) -> (usize, &'r Vec<f64>) {
    let Some(end) = path.last() else {
        return (0, &req.goal);
    };
    req.goals()
        .enumerate()
        .min_by(|a, b| {
            space
                .distance(a.1, end)
                .total_cmp(&space.distance(b.1, end))
        })
        .unwrap_or((0, &req.goal))
}

/// Mixed into the seed of the shortcutting generator (any constant other than 0).
const SHORTCUT_STREAM: u64 = 0x5348_4f52_5443_5554;

/// The seed of the shortcutting generator of a request seeded `seed`: a generator of its own,
/// so the shortcut depends only on the raw path and the seed, not on how many samples the
/// planner drew (an anytime planner stopped by its time limit draws a load-dependent number).
pub(crate) fn shortcut_stream(seed: u64) -> u64 {
    seed ^ SHORTCUT_STREAM
}

/// Validates the request, runs `planner`, then shortcuts, times and re-validates its path.
pub(crate) fn run(
    checker: &dyn Checker,
    req: &PlanRequest,
    planner: impl FnOnce(&mut Context<'_, '_>) -> Result<RawSolution, PlanError>,
) -> Result<PlanResult, PlanError> {
    run_with(checker, req, &Unconstrained, planner)
}

/// [`run`] with the shortcutting, timing and re-validation of `post`.
pub(crate) fn run_with(
    checker: &dyn Checker,
    req: &PlanRequest,
    post: &dyn PostProcess,
    planner: impl FnOnce(&mut Context<'_, '_>) -> Result<RawSolution, PlanError>,
) -> Result<PlanResult, PlanError> {
    let started = Instant::now();
    let counting = CountingChecker::new(checker);
    let asked = req;
    let resolved = admit(&counting, req)?;
    let req = &resolved;
    let space = counting.space().clone();
    let mut ctx = Context {
        checker: &counting,
        space: space.clone(),
        req,
        rng: ChaCha8Rng::seed_from_u64(req.seed),
        started,
        deadline: started
            .checked_add(req.time_limit)
            .unwrap_or_else(|| started + Duration::from_secs(365 * 24 * 3600)),
        race: None,
        solo: None,
        attempts_run: (1, 0),
        device_work: (0, 0),
        device_time: None,
    };
    let raw = match trivial_solution(&space, req) {
        Some(raw) => raw,
        None => planner(&mut ctx)?,
    };
    let planning = Planning {
        time: started.elapsed(),
        attempts_run: ctx.attempts_run,
        device_work: ctx.device_work,
        device_time: ctx.device_time,
    };
    if req.other_goals.is_empty() && asked.other_goals.is_empty() {
        return complete_with(&counting, req, raw, planning, post);
    }
    // A goal set: a nearer goal in straight sight of a waypoint first, then the path is
    // completed as a plan to the goal it reached.
    let mut raw = raw;
    if post.retargets() {
        if let Some(path) = retarget(&counting, req, &raw.path)? {
            raw.path = path;
        }
    }
    let (reached, goal) = goal_reached(&space, asked, &raw.path);
    let to_reached = PlanRequest {
        goal: goal.clone(),
        other_goals: Vec::new(),
        ..req.clone()
    };
    let mut result = complete_with(&counting, &to_reached, raw, planning, post)?;
    result.reached_goal = reached;
    Ok(result)
}

/// What becomes of a planner's raw path: shortcut, then timed and re-validated.
pub(crate) trait PostProcess {
    /// The shortcut path (its first and last waypoints are the request's start and goal).
    fn shortcut(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        raw: &[Vec<f64>],
    ) -> Result<Vec<Vec<f64>>, PlanError>;

    /// The timed trajectory along `path`, re-validated, and how it was timed.
    fn finish(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        path: &[Vec<f64>],
    ) -> Result<(Trajectory, trajectory::PathTiming), TrajectoryError>;

    /// Whether a goal set's raw path may end with a straight motion to another goal
    /// ([`retarget`]): not where straight motions could leave path constraints.
    fn retargets(&self) -> bool {
        false
    }
}

/// Candidate retargets checked at most (`retarget`), the cheapest.
pub const RETARGET_CANDIDATES: usize = 64;

/// A shorter way to a goal set: the raw `path` (ending at one goal of `req`'s set) cut at a
/// waypoint and continued by a straight motion to another goal of the set, when that is
/// shorter than the rest of `path` (joint-space length) and the motion is free at the
/// request's resolution. The planners end at the goal they meet first, often not the one
/// nearest along the way; this takes the shortest of the [`RETARGET_CANDIDATES`] cheapest
/// candidates (ties: the earlier waypoint, then the earlier goal), all checked in one batch.
/// `None` when no candidate is shorter or none is free.
pub(crate) fn retarget(
    counting: &CountingChecker<'_>,
    req: &PlanRequest,
    path: &[Vec<f64>],
) -> Result<Option<Vec<Vec<f64>>>, PlanError> {
    let space = counting.space();
    let Some(end) = path.last() else {
        return Ok(None);
    };
    if path.len() < 2 || req.other_goals.is_empty() {
        return Ok(None);
    }
    let along = trajectory::lengths_along(space, path);
    let total = along.last().copied().unwrap_or(0.0);
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (j, goal) in req.goals().enumerate() {
        if space.distance(goal, end) == 0.0 {
            continue; // the goal the path reached
        }
        for (i, q) in path[..path.len() - 1].iter().enumerate() {
            let cost = along[i] + space.distance(q, goal);
            // Shorter by more than rounding: a real gain.
            if cost < total * (1.0 - 1e-9) {
                candidates.push((cost, i, j));
            }
        }
    }
    if candidates.is_empty() {
        return Ok(None);
    }
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    candidates.truncate(RETARGET_CANDIDATES);
    let goals: Vec<&Vec<f64>> = req.goals().collect();
    let mut motions = MotionBatch::new(space.dof());
    for &(_, i, j) in &candidates {
        motions.push(&path[i], goals[j])?;
    }
    let verdicts = counting.check_motions(&motions, req.resolution)?;
    Ok(candidates
        .iter()
        .zip(&verdicts)
        .find(|(_, &ok)| ok)
        .map(|(&(_, i, j), _)| {
            let mut cut = path[..=i].to_vec();
            cut.push(goals[j].clone());
            cut
        }))
}

/// The post-processing of every plan without path constraints: batched random shortcuts
/// ([`trajectory::shortcut_refined`]), timing with a stop at every waypoint or through rounded
/// corners ([`PlanRequest::path_tolerance`]), re-validation at the request's resolution.
pub(crate) struct Unconstrained;

impl PostProcess for Unconstrained {
    fn shortcut(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        raw: &[Vec<f64>],
    ) -> Result<Vec<Vec<f64>>, PlanError> {
        Ok(trajectory::shortcut_refined(
            counting,
            raw,
            req.resolution,
            &mut ChaCha8Rng::seed_from_u64(shortcut_stream(req.seed)),
            req.shortcut_rounds,
            req.shortcut_min_gain,
            req.shortcut_refinements,
        )?)
    }

    fn finish(
        &self,
        counting: &CountingChecker<'_>,
        req: &PlanRequest,
        path: &[Vec<f64>],
    ) -> Result<(Trajectory, trajectory::PathTiming), TrajectoryError> {
        finish(counting, req, path)
    }

    fn retargets(&self) -> bool {
        true
    }
}

/// What a planner left besides its raw path, for [`complete`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Planning {
    /// Planning time (request checks included).
    pub time: Duration,
    /// Attempts run and the winner ([`Context::attempts_run`]).
    pub attempts_run: (usize, usize),
    /// Motions and configurations a device planner checked ([`Context::device_work`]).
    pub device_work: (u64, u64),
    /// The device's time on the plan ([`Context::device_time`]).
    pub device_time: Option<Duration>,
}

/// The checks every plan starts with: the joint space and the request's options, its start and
/// goal inside the joint limits and collision free (one call of `counting`). Returns the
/// request with its batch size resolved for the checker's backend.
pub(crate) fn admit(
    counting: &CountingChecker<'_>,
    req: &PlanRequest,
) -> Result<PlanRequest, PlanError> {
    let resolved = admit_limits(counting, req)?;
    let mut rows = vec![&resolved.start, &resolved.goal];
    rows.extend(&resolved.other_goals);
    let ends = ConfigBatch::from_rows(counting.space().dof(), &rows)?;
    let verdicts = counting.check_configs(&ends)?;
    admit_verdicts(resolved, &verdicts, counting)
}

/// [`admit`] up to the collision check of the start and goal: the joint space, the request's
/// options, the start and goal inside the joint limits. Returns the request with its batch
/// size resolved for `checker`'s backend.
pub(crate) fn admit_limits(
    checker: &dyn Checker,
    req: &PlanRequest,
) -> Result<PlanRequest, PlanError> {
    let space = checker.space();
    check_space(space)?;
    check_request(req)?;
    // The batch size, resolved once for the planner and the shortcutting after it.
    let resolved = PlanRequest {
        batch_size: Some(req.batch_size_on(checker.backend())),
        ..req.clone()
    };
    space
        .validate(&resolved.start)
        .map_err(PlanError::InvalidStart)?;
    check_goal_set(space, &resolved)?;
    Ok(resolved)
}

/// The end of [`admit`]: `resolved` (from [`admit_limits`]) if the verdicts of its start and
/// goals (start, goal, then `other_goals`, in that order) find the start free and at least one
/// goal free, else the error naming the start, or the goal, in collision. Of a goal set, the
/// goals in collision are left out (the first free one becomes `goal`).
pub(crate) fn admit_verdicts(
    mut resolved: PlanRequest,
    verdicts: &[bool],
    checker: &dyn Checker,
) -> Result<PlanRequest, PlanError> {
    if !verdicts.first().copied().unwrap_or(false) {
        return Err(PlanError::InvalidStart(in_collision(
            "start",
            checker,
            &resolved.start,
        )));
    }
    let goal_free = |k: usize| verdicts.get(1 + k).copied().unwrap_or(false);
    if goal_free(0) && resolved.other_goals.is_empty() {
        return Ok(resolved);
    }
    let mut free: Vec<Vec<f64>> = resolved
        .goals()
        .enumerate()
        .filter(|&(k, _)| goal_free(k))
        .map(|(_, g)| g.clone())
        .collect();
    if free.is_empty() {
        let mut msg = in_collision("goal", checker, &resolved.goal);
        if !resolved.other_goals.is_empty() {
            msg += &format!(
                " (and so are the {} other goals of the goal set)",
                resolved.other_goals.len()
            );
        }
        return Err(PlanError::InvalidGoal(msg));
    }
    resolved.goal = free.remove(0);
    resolved.other_goals = free;
    Ok(resolved)
}

/// Most colliding pairs named in an error message.
const CONTACTS_NAMED: usize = 4;

/// "the `which` configuration is in collision", with the pairs that collide where the checker
/// can name them ([`Checker::contacts`]).
pub(crate) fn in_collision(which: &str, checker: &dyn Checker, q: &[f64]) -> String {
    let mut msg = format!("the {which} configuration is in collision");
    if let Some(pairs) = checker.contacts(q).filter(|p| !p.is_empty()) {
        msg += ": ";
        msg += &pairs[..pairs.len().min(CONTACTS_NAMED)].join("; ");
        if pairs.len() > CONTACTS_NAMED {
            msg += &format!(" and {} more", pairs.len() - CONTACTS_NAMED);
        }
    }
    msg
}

/// The raw path of a request whose start is its goal (no planning needed), else `None`.
pub(crate) fn trivial_solution(space: &JointSpace, req: &PlanRequest) -> Option<RawSolution> {
    let goal = req.goals().find(|g| space.distance(&req.start, g) == 0.0)?;
    Some(RawSolution {
        path: vec![req.start.clone(), goal.clone()],
        iterations: 0,
        vertices: 0,
        edges: 0,
        cost_over_time: Vec::new(),
    })
}

/// Shortcuts, times and re-validates the raw path of an admitted request (see [`admit`]),
/// the checks through `counting`, whose counts go into the result's statistics.
pub(crate) fn complete(
    counting: &CountingChecker<'_>,
    req: &PlanRequest,
    raw: RawSolution,
    planning: Planning,
) -> Result<PlanResult, PlanError> {
    complete_with(counting, req, raw, planning, &Unconstrained)
}

/// [`complete`] with the shortcutting, timing and re-validation of `post`.
pub(crate) fn complete_with(
    counting: &CountingChecker<'_>,
    req: &PlanRequest,
    raw: RawSolution,
    planning: Planning,
    post: &dyn PostProcess,
) -> Result<PlanResult, PlanError> {
    let space = counting.space().clone();
    let simplify_start = Instant::now();
    let mut raw_path = raw.path;
    // The endpoints are exactly the requested configurations.
    if let Some(first) = raw_path.first_mut() {
        first.clone_from(&req.start);
    }
    if let Some(last) = raw_path.last_mut() {
        last.clone_from(&req.goal);
    }
    let simplified = if req.shortcut_rounds > 0 {
        post.shortcut(counting, req, &raw_path)?
    } else {
        raw_path.clone()
    };
    let mut last_error = None;
    let mut chosen = None;
    for candidate in [simplified, raw_path.clone()] {
        match post.finish(counting, req, &candidate) {
            Ok(timed) => {
                chosen = Some((candidate, timed));
                break;
            }
            Err(TrajectoryError::Checker(e)) => return Err(PlanError::Checker(e)),
            Err(e) => last_error = Some(e),
        }
    }
    let Some((path, (traj, timing))) = chosen else {
        return Err(PlanError::ValidationFailed(
            last_error.unwrap_or(TrajectoryError::EmptyPath),
        ));
    };
    let mut stats = PlanStats {
        planning_time: planning.time,
        simplification_time: simplify_start.elapsed(),
        path_length_before: trajectory::path_length(&space, &raw_path),
        path_length_after: trajectory::path_length(&space, &path),
        roadmap_vertices: raw.vertices,
        roadmap_edges: raw.edges,
        iterations: raw.iterations,
        cost_over_time: raw.cost_over_time,
        attempts: planning.attempts_run.0,
        winning_attempt: planning.attempts_run.1,
        batch_size: req.batch(),
        device_time: planning.device_time,
        ..PlanStats::default()
    };
    counting.fill(&mut stats);
    // Work a device planner did without the host's checker.
    let (device_motions, device_configs) = planning.device_work;
    stats.motions_checked += device_motions;
    stats.collision_checks += device_configs;
    Ok(PlanResult {
        planner: req.planner,
        path,
        raw_path,
        trajectory: traj,
        timing,
        reached_goal: 0,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planner_ids_of_ompl_as_moveit_sends_them() {
        for (id, want) in [
            ("rrt_connect", PlannerId::RrtConnect),
            ("RRTConnect", PlannerId::RrtConnect),
            ("RRTConnectkConfigDefault", PlannerId::RrtConnect),
            ("geometric::RRTConnect", PlannerId::RrtConnect),
            ("RRTstarkConfigDefault", PlannerId::RrtStar),
            ("RRTkConfigDefault", PlannerId::Rrt),
            ("PRMkConfigDefault", PlannerId::Prm),
            ("LazyPRM", PlannerId::LazyPrm),
            ("LazyPRMkConfig1", PlannerId::LazyPrm),
        ] {
            assert_eq!(id.parse::<PlannerId>(), Ok(want), "{id}");
        }
        for id in [
            "KPIECEkConfigDefault",
            "BiTRRT",
            "rrtconnect",
            "",
            "kConfigDefault",
        ] {
            let e = id.parse::<PlannerId>().unwrap_err().to_string();
            assert!(
                e.contains(&format!("'{id}'")) && e.contains("RRTConnect"),
                "{e}"
            );
        }
    }

    #[test]
    fn an_unset_batch_size_suits_the_planner_and_backend() {
        let mut req = PlanRequest::new(vec![0.0], vec![1.0], PlannerId::RrtConnect);
        assert_eq!(req.batch_size_on(Backend::Cpu), 1);
        assert_eq!(req.batch_size_on(Backend::Cuda), DEFAULT_BATCH_SIZE);
        req.planner = PlannerId::Prm;
        assert_eq!(req.batch_size_on(Backend::Cpu), DEFAULT_BATCH_SIZE);
        req.batch_size = Some(5);
        assert_eq!(req.batch_size_on(Backend::Cpu), 5);
        assert_eq!(req.batch_size_on(Backend::Cuda), 5);
        req.batch_size = Some(0);
        assert!(matches!(
            check_request(&req),
            Err(PlanError::InvalidRequest(m)) if m.contains("batch_size")
        ));
    }

    #[test]
    fn the_solo_phase_scales_with_the_batch() {
        assert_eq!(solo_budget(SOLO_WORK, 1), SOLO_WORK);
        assert_eq!(solo_budget(SOLO_WORK, 64), 64 * SOLO_WORK);
        assert_eq!(solo_budget(u64::MAX / 2, 64), u64::MAX);
    }

    #[test]
    fn race_keeps_the_least_progress_and_stops_only_attempts_that_cannot_win() {
        let r = Race::new();
        assert!(!r.beaten(u64::MAX, 7), "nothing found yet");
        r.offer(100, 2);
        assert!(!r.beaten(99, 5), "less progress still wins");
        assert!(
            !r.beaten(100, 1),
            "a tie with a lower attempt number still wins"
        );
        assert!(r.beaten(100, 3));
        assert!(r.beaten(101, 0));
        r.offer(150, 0);
        assert!(
            !r.beaten(100, 1),
            "a later, worse path does not replace the best"
        );
        r.offer(100, 1);
        assert!(r.beaten(100, 2));
        assert!(!r.beaten(100, 0));
    }

    #[test]
    fn attempt_seeds_start_at_the_request_seed_and_differ() {
        for seed in [0, 42, u64::MAX] {
            assert_eq!(attempt_seed(seed, 0), seed);
            let mut seeds: Vec<u64> = (0..MAX_ATTEMPTS).map(|a| attempt_seed(seed, a)).collect();
            seeds.sort_unstable();
            seeds.dedup();
            assert_eq!(seeds.len(), MAX_ATTEMPTS);
        }
    }
}
