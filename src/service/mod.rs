//! The planning node's engine state and operations, in plain Rust types.
//!
//! [`PlanningService`] is everything the ROS 2 node does short of talking ROS: it keeps the
//! robot, the scene, the current joint state and the settings; it turns joint-name/position
//! lists into group configurations (naming the joint at fault when one is wrong), turns
//! marker updates into obstacles, caches the collision checker for the current scene and base
//! state, and runs [`planners::plan`]. The node (`crate::ros`, feature `ros`) only converts
//! messages to and from these types, so all of this is tested without ROS.

pub mod acm;
pub mod agents;
pub mod attach;
pub mod cartesian;
pub mod cloud;
pub mod kinematics;
mod markers;
mod pilz;
pub mod roadmap;
pub mod scene_io;
pub mod sequence;
pub mod state;

pub use crate::collision::allowed::AllowRequest;
pub use attach::{AttachRequest, NewObject, ATTACHED_NS};
pub use cartesian::{ServiceCartesianRequest, ServiceCartesianResponse};
pub use kinematics::{IkAnswer, IkRequest};
pub use markers::{MeshSplitter, PreparedMarker};
pub use scene_io::SceneLoad;
pub use state::{
    point_at, RemainingProblem, StateCheck, StateCheckRequest, TrajectoryCheck,
    TrajectoryCheckRequest, START_TOLERANCE,
};

use std::time::Duration;

use nalgebra::{Isometry3, Point3};

use crate::collision::{Checker, CheckerOptions, CollisionError, RobotShapes};
use crate::planners::constrained::plan_constrained;
use crate::planners::dynamic_roadmap::DynamicError;
use crate::planners::pose::{plan_to_poses_with, solvers_for, MAX_GOAL_POSES};
use crate::planners::{
    self, PlanError, PlanRequest, PlanStats, PlannerId, UnknownPlanner, MAX_ATTEMPTS,
};
use crate::robot::constraint::{ConstraintError, ConstraintSet, ConstraintSpec, PathConstraints};
use crate::robot::decompose::Decomposition;
use crate::robot::ik::{self, IkOptions, PoseTarget};
use crate::robot::ompl_planning::OmplPlanning;
use crate::robot::{PlanningGroup, RobotError, RobotModel};
use crate::scene::cloud::CloudSettings;
use crate::scene::{Obstacle, Scene, Shape};
use crate::tf::{SharedTf, StampNs};
use crate::trajectory::{self, Along, LinkLimit, LinkSpeed, Trajectory};

/// The planner name of the persistent dynamic roadmap.
pub const DRM_PLANNER: &str = "drm";
/// Persistent roadmaps kept at once, one per planning group the `drm` planner planned for;
/// the one used longest ago goes first.
pub const MAX_ROADMAPS: usize = 4;

/// Longest planning time budget accepted, seconds (keeps `Duration` conversion in range).
const MAX_TIME_LIMIT: f64 = 1.0e6;

/// Settings of the service; the node fills them from its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSettings {
    /// Default planner (`prm`, `lazy_prm`, `rrt`, `rrt_star`, `rrt_connect` or `drm`, the
    /// persistent dynamic roadmap of [`roadmap`]).
    pub planner: String,
    /// Collision backend (`auto`, `cpu`, `cuda` or `hybrid`, see [`crate::collision::make_checker`]).
    pub backend: String,
    /// The robot geometry the planners check ([`RobotShapes::Spheres`] needs the robot's
    /// sphere model, [`RobotModel::spherized`]); the `drm` planner keeps the polytopes.
    pub shapes: RobotShapes,
    /// Joint-space step at which motions are collision checked; > 0.
    pub resolution: f64,
    /// Default planning time budget, seconds; > 0.
    pub time_limit: f64,
    /// Default random seed.
    pub seed: u64,
    /// Default velocity scaling in (0, 1]; 0: the robot's joint limits file default
    /// ([`RobotModel::default_scaling`]), 1 without one.
    pub velocity_scaling: f64,
    /// Default acceleration scaling in (0, 1]; 0: the robot's joint limits file default, 1
    /// without one.
    pub acceleration_scaling: f64,
    /// SRDF planning group (empty: the robot's default group).
    pub planning_group: String,
    /// Frame of the scene; markers must be expressed in it.
    pub planning_frame: String,
    /// Vertices of the persistent roadmap of the `drm` planner; > 0.
    pub roadmap_size: usize,
    /// RRT and RRT-Connect: attempts planned at once on CPU threads, the one that finds a
    /// path with the least work wins ([`PlanRequest::attempts`]); 1 ..= 256.
    pub planning_attempts: usize,
    /// RRT-Connect requests plan whole on the GPU ([`PlanRequest::on_device`]); other planners
    /// are not affected. Without a GPU checker such a request fails with an error naming it.
    pub plan_on_device: bool,
    /// On the device: extra attempts for a request that proves hard
    /// ([`PlanRequest::device_extra_attempts`]); `None`: 3 per attempt.
    pub device_extra_attempts: Option<u32>,
    /// On the device: iterations without a path before the extra attempts join
    /// ([`PlanRequest::device_escalate_after`]); at least 1.
    pub device_escalate_after: u32,
    /// How point clouds become obstacles ([`PlanningService::set_point_cloud`]).
    pub cloud: CloudSettings,
    /// Whether the robot's `ompl_planning.yaml` ([`RobotModel::ompl`], from a MoveIt
    /// config) applies ([`crate::planners::ompl`]): a planner id naming one of its
    /// configurations plans with it, a request naming no planner gets its group's
    /// `default_planner_config` (before the `planner` setting), and a group's
    /// `longest_valid_segment_fraction` makes the motion checks finer than `resolution` where
    /// it is finer.
    pub ompl_planning: bool,
    /// Largest deviation (rad, joint space) from a waypoint where a planned trajectory rounds
    /// the corner instead of stopping there ([`PlanRequest::path_tolerance`]; MoveIt's
    /// `path_tolerance`, 0.1 as its default); 0: stop at every waypoint. Cartesian (`LIN`,
    /// `CIRC`, `~/plan_cartesian`) and constrained plans are timed their own way.
    pub path_tolerance: f64,
    /// Pose goals: the share of the time limit, in (0, 1], past which no new batch of inverse
    /// kinematics starts begins once a collision-free goal configuration is known
    /// ([`PlanRequest::ik_time_share`]).
    pub ik_time_share: f64,
    /// How mesh markers (`MESH_RESOURCE`, `TRIANGLE_LIST`) become obstacles: with
    /// `max_parts` 1 (the default) a mesh is its convex hull; above 1 it is split into at
    /// most that many convex parts covering its triangles, so that a bin or a shelf keeps
    /// its hollows ([`PlanningService::apply_marker`], [`crate::robot::decompose`]).
    pub mesh_parts: Decomposition,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        Self {
            planner: "rrt_connect".into(),
            backend: "cpu".into(),
            shapes: RobotShapes::Polytopes,
            resolution: 0.01,
            time_limit: 5.0,
            seed: 0,
            velocity_scaling: 0.0,
            acceleration_scaling: 0.0,
            planning_group: String::new(),
            planning_frame: "world".into(),
            roadmap_size: 2000,
            planning_attempts: 1,
            plan_on_device: false,
            device_extra_attempts: None,
            device_escalate_after: crate::planners::device::DEFAULT_ESCALATE_AFTER,
            cloud: CloudSettings::default(),
            ompl_planning: true,
            path_tolerance: crate::trajectory::rounded::DEFAULT_PATH_TOLERANCE,
            ik_time_share: crate::planners::pose::IK_TIME_SHARE,
            mesh_parts: Decomposition::hull(),
        }
    }
}

/// A planning request: joint names with positions, and optional overrides of the settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServicePlanRequest {
    /// Start joint names and positions; `None` = the current joint state. Group joints
    /// missing here are taken from the current joint state.
    pub start: Option<(Vec<String>, Vec<f64>)>,
    /// Goal joint names and positions: every joint of the planning group must be given.
    pub goal: (Vec<String>, Vec<f64>),
    /// Planner override.
    pub planner: Option<String>,
    /// Time budget override, seconds.
    pub time_limit: Option<f64>,
    /// Seed override.
    pub seed: Option<u64>,
    /// Velocity scaling override, in (0, 1].
    pub vel_scale: Option<f64>,
    /// Acceleration scaling override, in (0, 1].
    pub acc_scale: Option<f64>,
    /// Parallel attempts override (RRT / RRT-Connect), 1 ..= 256.
    pub attempts: Option<i64>,
    /// A pose goal for a link instead of goal joint positions (`goal` must then be empty).
    pub goal_pose: Option<ServicePoseGoal>,
    /// A named state of the planning group (an SRDF `group_state`, e.g. `home`) instead of
    /// goal joint positions (`goal` and `goal_pose` must then be empty); `None` or empty: none.
    pub goal_name: Option<String>,
    /// Constraints every configuration of the path keeps (empty: none). Their frames are
    /// the planning frame (also when empty), a robot link taken where the start state puts it,
    /// or a frame of the transforms at their latest; the constraints are then fixed in the
    /// planning frame for the whole plan. Only `rrt_connect` plans under them
    /// ([`crate::planners::constrained`]); without a `planner` override it is used whatever
    /// the `planner` setting.
    pub path_constraints: ConstraintSpec,
    /// The planning group (an SRDF group of the robot) to plan for; `None` (or empty): the
    /// `planning_group` setting. Joints outside it hold their start values. The `drm`
    /// planner keeps a persistent roadmap per group it plans for (at most four).
    pub group: Option<String>,
    /// A Cartesian speed limit for one link (MoveIt's `max_cartesian_speed`); `None`: none.
    pub speed_limit: Option<SpeedLimit>,
    /// More goal states, each as `goal` (every joint of the planning group): a goal set, the
    /// plan ending at the goal (`goal` or `goal_name`) or at any of these, whichever the
    /// planner reaches ([`PlanRequest::other_goals`]; the response's `reached_goal` says
    /// which). Not with a pose goal (whose inverse kinematics solutions already make one) nor
    /// with LIN and CIRC.
    pub other_goals: Vec<(Vec<String>, Vec<f64>)>,
    /// More goal poses beside `goal_pose` (grasp candidates, say; at most
    /// [`MAX_GOAL_POSES`]` - 1`): the solutions of all of them make one goal set and the
    /// plan ends at whichever pose the planner reaches (the response's `reached_goal`: 0 for
    /// `goal_pose`, k for `other_goal_poses[k - 1]`). Only with `goal_pose`; not with LIN
    /// and CIRC.
    pub other_goal_poses: Vec<ServicePoseGoal>,
    /// A goal region instead of a goal state or pose (MoveIt's goal constraints; empty:
    /// none): the plan ends at a configuration satisfying every one of these constraints (a
    /// link's orientation within per-axis tolerances, a point of a link inside a box, joints
    /// within ranges), and the path constraints too. Goal configurations are found by
    /// projecting the start and random configurations onto them (seeded by the request's
    /// seed, within [`ServiceSettings::ik_time_share`] of the time limit once one is free);
    /// the collision-free ones, up to [`crate::planners::pose::GOAL_SET_SIZE`] nearest to
    /// the start, make one goal set. Frames as the path constraints'. Not with `goal`,
    /// `goal_name`, `goal_pose`, other goals, nor with LIN and CIRC.
    pub goal_constraints: ConstraintSpec,
}

/// A Cartesian speed limit: the returned trajectory is slowed uniformly until `link` moves
/// no faster than `max_speed` ([`trajectory::link_speed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedLimit {
    /// The link; `None` (or empty): the planning group's tip link.
    pub link: Option<String>,
    /// Largest speed of the link's origin, m/s; positive and finite.
    pub max_speed: f64,
}

/// A pose goal: where a link of the robot should end up.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicePoseGoal {
    /// The frame the pose is given in: the planning frame (also when empty), any link of
    /// the robot, taken where the start state puts it, or a frame of the transforms
    /// ([`PlanningService::set_transforms`]) at their latest.
    pub frame: String,
    /// The link to place; `None` = the planning group's tip link
    /// ([`crate::robot::ik::default_tip_link`]).
    pub link: Option<String>,
    /// Target position of the link frame's origin (m).
    pub position: [f64; 3],
    /// Target orientation as a quaternion `[x, y, z, w]` (normalised here); `None` = any
    /// orientation (a position goal).
    pub orientation: Option<[f64; 4]>,
    /// Largest position error (m); `None` = [`crate::robot::ik::DEFAULT_POSITION_TOLERANCE`].
    pub position_tolerance: Option<f64>,
    /// Largest orientation error (rad); `None` =
    /// [`crate::robot::ik::DEFAULT_ORIENTATION_TOLERANCE`].
    pub orientation_tolerance: Option<f64>,
}

impl ServicePlanRequest {
    /// The request that plans again from the robot's current state to `goal` (names and
    /// positions: the configuration an earlier plan of this request ended at), with the
    /// same planner, time limit, seed, scaling, attempts and path constraints: what the node
    /// plans when execution monitoring stopped a trajectory and `replan_attempts` allows
    /// another. A pose goal, and a goal set, become the configuration that was reached for
    /// it, so the robot still goes where it was going (not to another solution of the pose or
    /// another goal of the set, nor to a pose re-placed in a link frame that has moved). Path
    /// constraints given in the frame of a link the joints move are placed again where the new
    /// start puts that link.
    pub fn replan_to(&self, names: &[String], positions: &[f64]) -> Self {
        Self {
            start: None,
            goal: (names.to_vec(), positions.to_vec()),
            goal_pose: None,
            goal_name: None,
            other_goals: Vec::new(),
            other_goal_poses: Vec::new(),
            goal_constraints: ConstraintSpec::default(),
            ..self.clone()
        }
    }
}

/// A successful plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicePlanResponse {
    /// The timed trajectory (planning-group joint names and points).
    pub trajectory: Trajectory,
    /// The planned (shortcut) waypoints, group configurations from start to goal.
    pub path: Vec<Vec<f64>>,
    /// Counters and timings.
    pub stats: PlanStats,
    /// The planner that ran (`drm` or a [`PlannerId`] name).
    pub planner: String,
    /// The backend that checked collisions (`cpu`, `cuda` or `hybrid`).
    pub backend: String,
    /// For a pose goal: the link, and the position (m) and orientation (rad) errors of the
    /// trajectory's last point.
    pub pose_error: Option<(String, f64, f64)>,
    /// The planning group it was planned for.
    pub group: String,
    /// The `ompl_planning.yaml` configuration it was planned with (named by the request or
    /// the group's default), if any ([`crate::planners::ompl`]).
    pub planner_config: Option<String>,
    /// What the request's speed limit did, if it gave one.
    pub link_speed: Option<LinkSpeed>,
    /// With rounded corners ([`ServiceSettings::path_tolerance`]): the waypoints between the
    /// ends passed on an arc, and all of them; `None` where the trajectory stops at every
    /// waypoint or is timed another way.
    pub rounded_corners: Option<(usize, usize)>,
    /// For a pose goal: what its inverse kinematics search did; for a goal region, the
    /// search for configurations inside it.
    pub ik: Option<PoseSearch>,
    /// Which goal of a goal set the plan ends at: 0 for the goal, `k` for the request's
    /// `other_goals[k - 1]` ([`crate::planners::PlanResult::reached_goal`]); 0 without other goals and for a
    /// pose goal.
    pub reached_goal: usize,
}

/// What the inverse kinematics search of a pose goal did ([`crate::planners::pose::PosePlan`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseSearch {
    /// Time spent in inverse kinematics and the goals' collision checks (not in the plan's
    /// planning time).
    pub time: std::time::Duration,
    /// Starting configurations tried, over all goal poses.
    pub starts_tried: usize,
    /// True when the search stopped at its share of the time limit
    /// ([`ServiceSettings::ik_time_share`]) or at the limit.
    pub cut: bool,
}

/// What a marker update does (ROS `visualization_msgs/Marker` actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerAction {
    /// Add an obstacle (or replace the one with the same ns/id).
    Add,
    /// Same as [`MarkerAction::Add`].
    Modify,
    /// Remove the obstacle with this ns/id.
    Delete,
    /// Remove every obstacle.
    DeleteAll,
}

/// The geometry of a marker (ROS `visualization_msgs/Marker` types).
#[derive(Debug, Clone, PartialEq)]
pub enum MarkerKind {
    /// A box; `scale` = full sizes along x, y, z.
    Cube,
    /// A ball; `scale.x` = diameter (the largest scale is used, which can only enlarge it).
    Sphere,
    /// A cylinder about z; `scale.x` = diameter, `scale.z` = height.
    Cylinder,
    /// A mesh file's vertices in the marker frame (already scaled) and its triangles
    /// (indices into `points`; empty where they were not read): the obstacle is the convex
    /// hull of the points, or convex parts covering the triangles
    /// ([`ServiceSettings::mesh_parts`]).
    Mesh {
        /// The vertices.
        points: Vec<Point3<f64>>,
        /// The triangles, three indices into `points` each.
        triangles: Vec<[u32; 3]>,
    },
    /// Triangle-list vertices in the marker frame (already scaled), three per triangle; the
    /// obstacle is their convex hull, or convex parts covering the triangles
    /// ([`ServiceSettings::mesh_parts`]).
    TriangleList(Vec<Point3<f64>>),
    /// Any other marker type (arrow, line strip, text, ...), by its ROS type number.
    Other(i32),
}

/// One marker of a `MarkerArray`, in plain types.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerUpdate {
    /// Marker namespace.
    pub ns: String,
    /// Marker id within the namespace.
    pub id: i32,
    /// What to do.
    pub action: MarkerAction,
    /// The geometry.
    pub kind: MarkerKind,
    /// Frame of `pose`: the planning frame, a robot link (placed where the current joint
    /// state puts it) or a frame of the transforms ([`PlanningService::set_transforms`]).
    pub frame_id: String,
    /// Pose of the marker in `frame_id`.
    pub pose: Isometry3<f64>,
    /// Marker scale (meaning depends on `kind`).
    pub scale: [f64; 3],
}

impl MarkerUpdate {
    /// The obstacle id of this marker: `"ns/id"`.
    pub fn obstacle_id(&self) -> String {
        format!("{}/{}", self.ns, self.id)
    }
}

/// Why a service operation failed; every variant names the input at fault.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A joint name the robot does not have.
    #[error("{which}: unknown joint '{joint}'")]
    UnknownJoint {
        /// `start`, `goal` or `joint state`.
        which: &'static str,
        /// The name.
        joint: String,
    },
    /// A joint of the planning group has no value.
    #[error("{which}: no position for planning-group joint '{joint}'")]
    MissingJoint {
        /// `start` or `goal`.
        which: &'static str,
        /// The joint.
        joint: String,
    },
    /// A position that is NaN or infinite.
    #[error("{which}: joint '{joint}' position is {value}")]
    NotFinite {
        /// `start`, `goal` or `joint state`.
        which: &'static str,
        /// The joint.
        joint: String,
        /// The value.
        value: f64,
    },
    /// A position outside the joint's limits.
    #[error("{which}: joint '{joint}' position {value} is outside its limits [{lower}, {upper}]")]
    OutOfLimits {
        /// `start` or `goal`.
        which: &'static str,
        /// The joint.
        joint: String,
        /// The value.
        value: f64,
        /// Lower limit.
        lower: f64,
        /// Upper limit.
        upper: f64,
    },
    /// Names and positions of different lengths, or a joint given twice.
    #[error("{which}: {message}")]
    BadJointList {
        /// `start`, `goal` or `joint state`.
        which: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Path constraints that cannot be used (a link, frame, tolerance or planner).
    #[error("path_constraints: {0}")]
    BadPathConstraints(String),
    /// Goal constraints that cannot be used (a link, frame, tolerance, planner, or given with
    /// another goal).
    #[error("goal_constraints: {0}")]
    BadGoalConstraints(String),
    /// One motion of a sequence failed ([`PlanningService::plan_sequence`]).
    #[error("item {index} ({planner}): {error}")]
    SequenceItem {
        /// Its index, from 0.
        index: usize,
        /// The planner it asked for.
        planner: String,
        /// Why.
        error: Box<ServiceError>,
    },
    /// Two motions of a sequence cannot be blended (the curve collides, leaves its sphere or
    /// cannot be timed).
    #[error("blend_radius: {0}")]
    Blend(String),
    /// The request has no start and no joint state was received.
    #[error("start: no start state given and no joint state received yet")]
    NoCurrentState,
    /// A request option or setting is unusable.
    #[error("{name}: {reason}")]
    BadOption {
        /// The option.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An unknown planner name.
    #[error(transparent)]
    UnknownPlanner(#[from] UnknownPlanner),
    /// The planning group could not be formed.
    #[error("planning group '{group}': {source}")]
    Group {
        /// The group name.
        group: String,
        /// Why.
        source: RobotError,
    },
    /// The collision checker could not be built.
    #[error("collision checker ({backend}): {source}")]
    Checker {
        /// The backend asked for.
        backend: String,
        /// Why.
        source: CollisionError,
    },
    /// Planning failed (start/goal in collision, no path within the time limit, ...).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The persistent roadmap could not be built or updated.
    #[error("roadmap: {0}")]
    Roadmap(#[from] DynamicError),
    /// A pose goal that cannot be used (frame, link, quaternion, tolerances, or given with
    /// goal joint positions).
    #[error("goal_pose: {0}")]
    BadPoseGoal(String),
    /// A pose of the request's other goal poses that cannot be used (frame, link,
    /// quaternion, tolerances).
    #[error("other_goal_poses[{index}]: {message}")]
    BadOtherGoalPose {
        /// Its index in the request's other goal poses.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A goal of the request's other goals that cannot be used.
    #[error("other_goal_states[{index}]: {source}")]
    BadOtherGoal {
        /// Its index in the request's other goals.
        index: usize,
        /// What is wrong with it.
        source: Box<ServiceError>,
    },
    /// The pose of an inverse kinematics request that cannot be used (frame, link,
    /// quaternion, tolerances).
    #[error("pose: {0}")]
    BadPose(String),
    /// Cartesian path waypoints that cannot be used (frame, link, quaternion, none given).
    #[error("waypoints: {0}")]
    BadWaypoints(String),
    /// A point cloud that cannot be used (frame, settings, no joint state for the self
    /// filter).
    #[error("point cloud: {0}")]
    BadCloud(String),
    /// A marker in a frame that cannot be brought into the planning frame.
    #[error("marker '{marker}': {reason}")]
    WrongFrame {
        /// The marker (`ns/id`).
        marker: String,
        /// Why its frame cannot be used (names the frame).
        reason: String,
    },
    /// A marker type that cannot be an obstacle.
    #[error("marker '{marker}': unsupported marker type {kind}")]
    UnsupportedMarker {
        /// The marker (`ns/id`).
        marker: String,
        /// Its type.
        kind: String,
    },
    /// A marker's geometry is unusable (sizes, pose, mesh).
    #[error("marker '{marker}': {reason}")]
    BadMarker {
        /// The marker (`ns/id`).
        marker: String,
        /// What is wrong.
        reason: String,
    },
    /// An object could not be attached or detached.
    #[error("attached object '{object}': {reason}")]
    Attach {
        /// The object id.
        object: String,
        /// What is wrong.
        reason: String,
    },
    /// A scene file or text could not be loaded or written.
    #[error("scene '{origin}': {reason}")]
    SceneFile {
        /// The file (or where the text came from).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// An allowed-collision change that cannot be made (an unknown name, two obstacles).
    #[error(transparent)]
    AllowedCollision(#[from] crate::collision::allowed::AllowError),
    /// A DELETE for a marker that is not in the scene.
    #[error("marker '{marker}': not in the scene")]
    UnknownMarker {
        /// The marker (`ns/id`).
        marker: String,
    },
}

/// What kind of failure an error is, for clients that report codes (the node maps these to
/// `PlanPath` error codes, which follow `moveit_msgs/MoveItErrorCodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCategory {
    /// The start state is malformed, unknown or outside the limits.
    InvalidStart,
    /// The goal state is malformed, unknown, incomplete or outside the limits.
    InvalidGoal,
    /// No start was given and no joint state has been received.
    StaleState,
    /// The start configuration is in collision (or otherwise refused by the planner).
    StartInCollision,
    /// The start configuration is outside the request's path constraints.
    StartViolatesConstraints,
    /// The goal configuration is in collision (or otherwise refused by the planner).
    GoalInCollision,
    /// The planning group does not exist.
    InvalidGroup,
    /// No path was found within the time limit.
    PlanningFailed,
    /// A path was found but failed the final re-validation.
    InvalidMotionPlan,
    /// A marker could not be applied.
    InvalidObject,
    /// No configuration puts the link at the pose goal.
    NoIkSolution,
    /// Anything else (bad options, unknown planner, checker failure).
    Failure,
}

impl ServiceError {
    /// The kind of failure.
    pub fn category(&self) -> ErrorCategory {
        use ErrorCategory as C;
        let by_side = |which: &str| {
            if which == "goal" {
                C::InvalidGoal
            } else {
                C::InvalidStart
            }
        };
        match self {
            ServiceError::SequenceItem { error, .. } => error.category(),
            ServiceError::UnknownJoint { which, .. }
            | ServiceError::MissingJoint { which, .. }
            | ServiceError::NotFinite { which, .. }
            | ServiceError::OutOfLimits { which, .. }
            | ServiceError::BadJointList { which, .. } => by_side(which),
            ServiceError::BadPoseGoal(_)
            | ServiceError::BadOtherGoal { .. }
            | ServiceError::BadOtherGoalPose { .. }
            | ServiceError::BadPose(_)
            | ServiceError::BadWaypoints(_)
            | ServiceError::BadPathConstraints(_)
            | ServiceError::BadGoalConstraints(_)
            | ServiceError::BadOption {
                name: "other_goal_states" | "other_goal_poses",
                ..
            }
            | ServiceError::Plan(PlanError::GoalViolatesConstraints(_)) => C::InvalidGoal,
            ServiceError::Plan(PlanError::StartViolatesConstraints(_)) => {
                C::StartViolatesConstraints
            }
            ServiceError::Plan(PlanError::NoIkSolution(_)) => C::NoIkSolution,
            ServiceError::NoCurrentState => C::StaleState,
            ServiceError::Group { .. } => C::InvalidGroup,
            ServiceError::Plan(PlanError::InvalidStart(_)) => C::StartInCollision,
            ServiceError::Plan(PlanError::InvalidGoal(_)) => C::GoalInCollision,
            ServiceError::Plan(PlanError::NoPath { .. } | PlanError::Blocked { .. })
            | ServiceError::Blend(_) => C::PlanningFailed,
            ServiceError::Plan(PlanError::ValidationFailed(_)) => C::InvalidMotionPlan,
            ServiceError::WrongFrame { .. }
            | ServiceError::UnsupportedMarker { .. }
            | ServiceError::BadMarker { .. }
            | ServiceError::UnknownMarker { .. }
            | ServiceError::Attach { .. }
            | ServiceError::SceneFile { .. }
            | ServiceError::AllowedCollision(_)
            | ServiceError::BadCloud(_) => C::InvalidObject,
            _ => C::Failure,
        }
    }
}

/// ROS `visualization_msgs/Marker` type numbers.
pub mod marker_type {
    /// `CUBE`.
    pub const CUBE: i32 = 1;
    /// `SPHERE`.
    pub const SPHERE: i32 = 2;
    /// `CYLINDER`.
    pub const CYLINDER: i32 = 3;
    /// `MESH_RESOURCE`.
    pub const MESH_RESOURCE: i32 = 10;
    /// `TRIANGLE_LIST`.
    pub const TRIANGLE_LIST: i32 = 11;
}

impl MarkerAction {
    /// The action of a ROS marker action number (`ADD`/`MODIFY` = 0, `DELETE` = 2,
    /// `DELETEALL` = 3); `None` for any other number.
    pub fn from_ros(action: i32) -> Option<MarkerAction> {
        match action {
            0 => Some(MarkerAction::Add),
            2 => Some(MarkerAction::Delete),
            3 => Some(MarkerAction::DeleteAll),
            _ => None,
        }
    }
}

impl MarkerKind {
    /// The kind of a ROS marker type number whose geometry needs no file: `CUBE`, `SPHERE`,
    /// `CYLINDER`, and `TRIANGLE_LIST` with its `points` scaled by `scale` (as RViz draws
    /// them). `MESH_RESOURCE` needs the mesh loaded by the caller ([`MarkerKind::Mesh`]);
    /// every other number is [`MarkerKind::Other`].
    pub fn from_ros(kind: i32, points: &[Point3<f64>], scale: [f64; 3]) -> MarkerKind {
        match kind {
            marker_type::CUBE => MarkerKind::Cube,
            marker_type::SPHERE => MarkerKind::Sphere,
            marker_type::CYLINDER => MarkerKind::Cylinder,
            marker_type::TRIANGLE_LIST => MarkerKind::TriangleList(
                points
                    .iter()
                    .map(|p| Point3::new(p.x * scale[0], p.y * scale[1], p.z * scale[2]))
                    .collect(),
            ),
            other => MarkerKind::Other(other),
        }
    }

    /// The ROS marker type number of this kind.
    pub fn ros_type(&self) -> i32 {
        match self {
            MarkerKind::Cube => marker_type::CUBE,
            MarkerKind::Sphere => marker_type::SPHERE,
            MarkerKind::Cylinder => marker_type::CYLINDER,
            MarkerKind::Mesh { .. } => marker_type::MESH_RESOURCE,
            MarkerKind::TriangleList(_) => marker_type::TRIANGLE_LIST,
            MarkerKind::Other(t) => *t,
        }
    }
}

/// The marker that draws `obstacle` (namespace = obstacle id, id 0, action ADD); a convex
/// mesh becomes a TRIANGLE_LIST of its hull with unit scale.
pub fn obstacle_marker(obstacle: &Obstacle, frame_id: &str) -> MarkerUpdate {
    let (kind, scale) = match &obstacle.shape {
        Shape::Box { half_extents } => (
            MarkerKind::Cube,
            [
                2.0 * half_extents.x,
                2.0 * half_extents.y,
                2.0 * half_extents.z,
            ],
        ),
        Shape::Sphere { radius } => (MarkerKind::Sphere, [2.0 * radius; 3]),
        Shape::Cylinder {
            radius,
            half_length,
        } => (
            MarkerKind::Cylinder,
            [2.0 * radius, 2.0 * radius, 2.0 * half_length],
        ),
        Shape::ConvexMesh { polytope } => (
            MarkerKind::TriangleList(
                polytope
                    .faces
                    .iter()
                    .flat_map(|f| f.iter())
                    .filter_map(|&i| polytope.vertices.get(i as usize).copied())
                    .collect(),
            ),
            [1.0; 3],
        ),
    };
    MarkerUpdate {
        ns: obstacle.id.clone(),
        id: 0,
        action: MarkerAction::Add,
        kind,
        frame_id: frame_id.to_string(),
        pose: obstacle.pose,
        scale,
    }
}

/// The CUDA side of a service's backend, to be built away from the service
/// ([`PlanningService::gpu_warm_up`]): the node builds it on a thread of its own when it loads
/// a robot, so that the first request does not pay the kernels' compilation and the driver's
/// translation (tens of seconds on a fresh machine).
#[derive(Debug, Clone)]
pub struct GpuWarmUp {
    robot: RobotModel,
    group: PlanningGroup,
    base: Vec<f64>,
    backend: String,
    shapes: RobotShapes,
}

impl GpuWarmUp {
    /// Builds and drops the CUDA checker ([`crate::collision::warm_up`]): the time it took,
    /// or `None` where the backend does not use the GPU here.
    pub fn run(self) -> Result<Option<Duration>, CollisionError> {
        crate::collision::warm_up(
            &self.backend,
            &self.robot,
            &self.group,
            &self.base,
            CheckerOptions {
                shapes: self.shapes,
                ..CheckerOptions::default()
            },
        )
    }
}

/// The checker built for one scene revision, base state, backend and group.
struct CachedChecker {
    revision: u64,
    base: Vec<f64>,
    backend: String,
    shapes: RobotShapes,
    group: String,
    checker: Box<dyn Checker>,
}

/// The planning node's engine state: robot, scene, current joint state, settings, the cached
/// collision checker and the last planned path.
pub struct PlanningService {
    /// The robot as loaded, without attached objects.
    base_robot: RobotModel,
    /// The robot with the attached objects: what is planned for.
    robot: RobotModel,
    scene: Scene,
    settings: ServiceSettings,
    /// Full robot state from the latest joint state (neutral until one arrives).
    current: Vec<f64>,
    has_current: bool,
    cached: Option<CachedChecker>,
    checker_builds: u64,
    last_path: Option<(String, Vec<Vec<f64>>)>,
    /// The persistent roadmaps of the `drm` planner, one per planning group planned for
    /// (at most [`MAX_ROADMAPS`]), the one used last at the end.
    roadmaps: Vec<roadmap::Persistent>,
    /// Attached objects of the initial scene that could not be attached.
    attach_errors: Vec<String>,
    /// Transforms of frames the robot does not know (a camera, `map`), from `/tf`.
    transforms: Option<SharedTf>,
    /// This service among all made in the process (see [`WorldRevision`]).
    instance: u64,
    /// Bumped whenever the robot's bodies or allowed collisions change (objects attached or
    /// detached, [`PlanningService::allow_collisions`]).
    robot_changes: u64,
    /// The allowed collisions set at run time.
    acm: crate::collision::allowed::AllowedCollisions,
    /// Mesh markers split into convex parts.
    marker_parts: markers::MarkerParts,
}

/// Everything a collision verdict of a [`PlanningService`] depends on besides the checked
/// configurations: which service, the scene's revision and the robot's attached objects.
/// Two equal values mean nothing a verdict depends on has changed in between (execution
/// monitoring re-checks the rest of a running trajectory when it differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorldRevision {
    instance: u64,
    scene: u64,
    robot: u64,
}

/// Counts the services made, so that a replaced service (a new robot) never has the
/// [`WorldRevision`] of the one before.
static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for PlanningService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanningService")
            .field("robot", &self.robot.tree.name)
            .field("obstacles", &self.scene.len())
            .field("settings", &self.settings)
            .field("has_current", &self.has_current)
            .finish_non_exhaustive()
    }
}

/// `scene` with its frame renamed to `frame` (same obstacles).
fn reframed(scene: Scene, frame: &str) -> Scene {
    if scene.frame() == frame {
        return scene;
    }
    let mut renamed = Scene::new(frame);
    for o in scene.iter() {
        // The obstacles of a scene are valid and their ids unique, so adding them again
        // cannot fail; were it to, the obstacle is dropped rather than panicking.
        let _ = renamed.add(o.clone());
    }
    renamed
}

fn check_lists<'a>(
    which: &'static str,
    names: &'a [String],
    positions: &'a [f64],
) -> Result<Vec<(&'a str, f64)>, ServiceError> {
    if names.len() != positions.len() {
        return Err(ServiceError::BadJointList {
            which,
            message: format!(
                "{} joint names but {} positions",
                names.len(),
                positions.len()
            ),
        });
    }
    let mut out: Vec<(&str, f64)> = Vec::with_capacity(names.len());
    for (name, &x) in names.iter().zip(positions) {
        if out.iter().any(|(n, _)| *n == name.as_str()) {
            return Err(ServiceError::BadJointList {
                which,
                message: format!("joint '{name}' appears twice"),
            });
        }
        out.push((name.as_str(), x));
    }
    Ok(out)
}

impl PlanningService {
    /// The velocity and acceleration scaling of a request: its own where it gives one, else
    /// the settings', else (settings 0) the robot's joint limits file defaults, else 1. A
    /// value outside (0, 1] is refused naming it.
    pub(crate) fn scalings(
        &self,
        vel: Option<f64>,
        acc: Option<f64>,
    ) -> Result<(f64, f64), ServiceError> {
        let s = &self.settings;
        let d = self.robot.default_scaling;
        let pick = |name: &'static str, given: Option<f64>, setting: f64, file: Option<f64>| {
            let v = given.unwrap_or(if setting == 0.0 {
                file.unwrap_or(1.0)
            } else {
                setting
            });
            if v > 0.0 && v <= 1.0 {
                Ok(v)
            } else {
                Err(ServiceError::BadOption {
                    name,
                    reason: format!("must be in (0, 1], got {v}"),
                })
            }
        };
        Ok((
            pick("velocity_scaling", vel, s.velocity_scaling, d.velocity)?,
            pick(
                "acceleration_scaling",
                acc,
                s.acceleration_scaling,
                d.acceleration,
            )?,
        ))
    }
}

fn finite_size(marker: &str, what: &str, v: f64) -> Result<f64, ServiceError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ServiceError::BadMarker {
            marker: marker.into(),
            reason: format!("{what} must be positive and finite, got {v}"),
        })
    }
}

/// A request checked and converted by [`PlanningService::prepare`].
struct Prepared {
    /// The planner's request (start and goal in group order).
    request: PlanRequest,
    /// The full start state (the joints outside the group included).
    start_state: Vec<f64>,
    /// The start state with the group's joints zeroed: what a checker for it depends on
    /// ([`PlanningService::masked_base`]).
    base: Vec<f64>,
    /// Whether the `drm` planner answers it from the persistent roadmap.
    use_roadmap: bool,
    /// A pose goal, solved for once the checker is ready (`request.goal` is empty then).
    pose: Option<PoseTarget>,
    /// Further goal poses beside `pose` (one goal set with it).
    other_poses: Vec<PoseTarget>,
    /// A goal region (the goal constraints and the path constraints, in the planning frame),
    /// searched for once the checker is ready (`request.goal` is empty then).
    region: Option<PathConstraints>,
    /// The path constraints in the planning frame (empty: none).
    constraints: PathConstraints,
    /// The planning group it plans for.
    group: PlanningGroup,
    /// The `ompl_planning.yaml` configuration it plans with, if any.
    planner_config: Option<String>,
    /// The speed limit.
    speed_limit: Option<LinkLimit>,
    /// The circle's point of a CIRC motion.
    circ: Option<crate::planners::pilz::CircPoint>,
}

/// The checker of `cached` (borrowing only that field of the service).
fn cached_checker(cached: &Option<CachedChecker>) -> Result<&dyn Checker, ServiceError> {
    match cached {
        Some(c) => Ok(c.checker.as_ref()),
        None => Err(ServiceError::BadOption {
            name: "backend",
            reason: "no checker".into(),
        }),
    }
}

/// Whether two requests differ only in their start and goal.
fn same_options(a: &PlanRequest, b: &PlanRequest) -> bool {
    let strip = |r: &PlanRequest| PlanRequest {
        start: Vec::new(),
        goal: Vec::new(),
        ..r.clone()
    };
    strip(a) == strip(b)
}

impl PlanningService {
    /// A service for `robot` in `scene`. The scene's frame is set to the planning frame of
    /// `settings` (obstacles already in it are kept as they are).
    ///
    /// The scene's attached objects (a scene file's `attached:` list) are attached to the
    /// robot; one that cannot be (an unknown link) is left out and named in
    /// [`PlanningService::attach_errors`]. So is an allowed-collision entry of the scene that
    /// names nothing known; the others are applied ([`PlanningService::allow_collisions`]).
    /// The scene's MoveIt `allowed_collision_matrix` entries are applied first, those naming
    /// what the robot and the scene lack left aside (named there too).
    pub fn new(robot: RobotModel, mut scene: Scene, settings: ServiceSettings) -> Self {
        let current = robot.tree.neutral_state();
        let base_robot = robot.clone();
        let mut robot = robot;
        let mut attach_errors = Vec::new();
        for o in scene.take_attached() {
            if let Err(e) = robot.attach(&o) {
                attach_errors.push(format!("attached object '{}': {e}", o.id));
            }
        }
        // The entries before the scene is put in the planning frame (which keeps obstacles
        // only): its MoveIt matrix's known ones, then its own list.
        let (entries, unknown) = crate::collision::allowed::scene_entries(&robot, &scene);
        if !unknown.is_empty() {
            attach_errors.push(format!(
                "names of the scene's allowed_collision_matrix the robot does not have, left \
                 aside: {}",
                unknown.join(", ")
            ));
        }
        let scene = reframed(scene, &settings.planning_frame);
        let mut service = Self {
            base_robot,
            attach_errors,
            robot,
            scene,
            settings,
            current,
            has_current: false,
            cached: None,
            checker_builds: 0,
            last_path: None,
            roadmaps: Vec::new(),
            transforms: None,
            instance: INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            robot_changes: 0,
            acm: Default::default(),
            marker_parts: Default::default(),
        };
        for e in entries {
            if let Err(err) = service.apply_allowed(std::slice::from_ref(&e), false) {
                service.attach_errors.push(err.to_string());
            }
        }
        service
    }

    /// This service among all made in the process: a new robot (a new service) has another.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// What collision verdicts depend on now (see [`WorldRevision`]).
    pub fn world_revision(&self) -> WorldRevision {
        WorldRevision {
            instance: self.instance,
            scene: self.scene.revision(),
            robot: self.robot_changes,
        }
    }

    /// Lets poses, markers and point clouds be given in frames the robot does not know: such a
    /// frame is resolved through `transforms` (filled by the node from `/tf` and
    /// `/tf_static`) to its nearest ancestor that is the planning frame or a robot link (then
    /// placed where the current joint state puts that link), or else to the planning frame.
    pub fn set_transforms(&mut self, transforms: SharedTf) {
        self.transforms = Some(transforms);
    }

    /// The robot, with its attached objects.
    pub fn robot(&self) -> &RobotModel {
        &self.robot
    }

    /// Why attached objects or allowed-collision entries of the scene given to
    /// [`PlanningService::new`] were left out.
    pub fn attach_errors(&self) -> &[String] {
        &self.attach_errors
    }

    /// The current settings.
    pub fn settings(&self) -> &ServiceSettings {
        &self.settings
    }

    /// Replaces the settings (checked when the next plan runs). With a new planning frame
    /// the obstacles keep their poses, now read in the new frame (there is no transform
    /// tree here), and later markers must use the new frame.
    pub fn set_settings(&mut self, settings: ServiceSettings) {
        if settings.planning_frame != self.scene.frame() {
            let scene = std::mem::take(&mut self.scene);
            self.scene = reframed(scene, &settings.planning_frame);
        }
        self.settings = settings;
    }

    /// The scene.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// The obstacles of the scene, for publishing.
    pub fn scene_obstacles(&self) -> impl Iterator<Item = &Obstacle> {
        self.scene.iter()
    }

    /// One marker per obstacle (see [`obstacle_marker`]), in the planning frame.
    pub fn scene_markers(&self) -> Vec<MarkerUpdate> {
        self.scene
            .iter()
            .map(|o| obstacle_marker(o, self.scene.frame()))
            .collect()
    }

    /// How many collision checkers have been built (the checker is cached and rebuilt only
    /// when the scene, the base state, the backend or the group changed).
    pub fn checker_builds(&self) -> u64 {
        self.checker_builds
    }

    /// The path (group configurations) of the last successful plan.
    pub fn last_plan(&self) -> Option<&[Vec<f64>]> {
        self.last_path.as_ref().map(|(_, path)| path.as_slice())
    }

    /// The planning group named by the settings.
    pub fn group(&self) -> Result<PlanningGroup, ServiceError> {
        self.group_named(&self.settings.planning_group)
    }

    /// The SRDF group whose joints are exactly `names` (in any order), for a trajectory given
    /// by joint names: `None` when the settings' group has them (or no group has), else the
    /// first such group of the SRDF.
    pub fn group_of_joints(&self, names: &[String]) -> Option<String> {
        let mut wanted = names.to_vec();
        wanted.sort();
        let same = |g: &PlanningGroup| {
            let mut have = g.space.names.clone();
            have.sort();
            have == wanted
        };
        if self.group().is_ok_and(|g| same(&g)) {
            return None;
        }
        self.robot.srdf.as_ref()?.groups.iter().find_map(|g| {
            self.robot
                .group(&g.name)
                .ok()
                .filter(|g| same(g))
                .map(|g| g.name)
        })
    }

    /// The group a request names (`None` or empty: the settings' group).
    pub fn request_group(&self, name: Option<&str>) -> Result<PlanningGroup, ServiceError> {
        match name.filter(|g| !g.is_empty()) {
            Some(name) => self.group_named(name),
            None => self.group(),
        }
    }

    /// The planning group `name` of the robot (empty: all its actuated joints, as the
    /// `planning_group` setting); an error naming it when the robot has none of that name.
    pub fn group_named(&self, name: &str) -> Result<PlanningGroup, ServiceError> {
        if name.is_empty() {
            Ok(self.robot.default_group())
        } else {
            self.robot
                .group(name)
                .map_err(|source| ServiceError::Group {
                    group: name.to_string(),
                    source,
                })
        }
    }

    /// Whether a joint state has been received.
    pub fn has_joint_state(&self) -> bool {
        self.has_current
    }

    /// Records the current joint state. Unknown names (and joints without a variable, such
    /// as fixed joints) are ignored; a non-finite position or a malformed list is an error and
    /// leaves the state unchanged.
    pub fn set_joint_state(
        &mut self,
        names: &[String],
        positions: &[f64],
    ) -> Result<(), ServiceError> {
        let which = "joint state";
        let pairs = check_lists(which, names, positions)?;
        let mut updates = Vec::with_capacity(pairs.len());
        for (name, x) in pairs {
            let Ok(j) = self.robot.tree.joint(name) else {
                continue;
            };
            if let Some(v) = self.variable_of(which, name, j, x)? {
                updates.push((v, x));
            }
        }
        for (v, x) in updates {
            if let Some(slot) = self.current.get_mut(v) {
                *slot = x;
            }
        }
        self.has_current = true;
        Ok(())
    }

    /// The state variable of joint `j` (named `name`, `None` for a joint without one, such
    /// as a fixed joint) that position `x` sets; a non-finite `x` is an error naming it.
    fn variable_of(
        &self,
        which: &'static str,
        name: &str,
        j: usize,
        x: f64,
    ) -> Result<Option<usize>, ServiceError> {
        if !x.is_finite() {
            return Err(ServiceError::NotFinite {
                which,
                joint: name.into(),
                value: x,
            });
        }
        Ok(self.robot.tree.joints.get(j).and_then(|jt| jt.variable))
    }

    /// Full robot state from `base` with the named positions written in; errors name the
    /// joint. Returns the state and which variables were given.
    fn apply_named(
        &self,
        which: &'static str,
        base: &[f64],
        names: &[String],
        positions: &[f64],
    ) -> Result<(Vec<f64>, Vec<bool>), ServiceError> {
        let pairs = check_lists(which, names, positions)?;
        let mut state = base.to_vec();
        let mut given = vec![false; state.len()];
        for (name, x) in pairs {
            let j = self
                .robot
                .tree
                .joint(name)
                .map_err(|_| ServiceError::UnknownJoint {
                    which,
                    joint: name.into(),
                })?;
            if let Some(v) = self.variable_of(which, name, j, x)? {
                if let (Some(s), Some(g)) = (state.get_mut(v), given.get_mut(v)) {
                    *s = x;
                    *g = true;
                }
            }
        }
        Ok((state, given))
    }

    /// Checks that every group joint is given and within its limits; returns the group
    /// configuration.
    fn group_config(
        which: &'static str,
        group: &PlanningGroup,
        state: &[f64],
        given: &[bool],
    ) -> Result<Vec<f64>, ServiceError> {
        let space = &group.space;
        let mut q = Vec::with_capacity(group.variables.len());
        for (k, &v) in group.variables.iter().enumerate() {
            if !given.get(v).copied().unwrap_or(false) {
                let joint = space.names.get(k).cloned().unwrap_or_default();
                return Err(ServiceError::MissingJoint { which, joint });
            }
            q.push(state.get(v).copied().unwrap_or(f64::NAN));
        }
        // A hair past a limit (URDF limits are written rounded, encoders read a little over)
        // is moved onto it, as for `gmp plan` and the MBM problems; farther out is refused.
        space.snap_to_limits(&mut q, crate::robot::LIMIT_TOLERANCE);
        for (k, &x) in q.iter().enumerate() {
            let (lo, hi) = (space.lower[k], space.upper[k]);
            if !space.continuous[k] && (x < lo || x > hi) {
                return Err(ServiceError::OutOfLimits {
                    which,
                    joint: space.names.get(k).cloned().unwrap_or_default(),
                    value: x,
                    lower: lo,
                    upper: hi,
                });
            }
        }
        Ok(q)
    }

    /// Plans from the request's start (or the current state) to its goal in the current
    /// scene. Joints outside the planning group hold their start values.
    pub fn plan(&mut self, req: ServicePlanRequest) -> Result<ServicePlanResponse, ServiceError> {
        let prepared = self.prepare(&req)?;
        let group = prepared.group.clone();
        if prepared.use_roadmap {
            self.ensure_roadmap(&group, &prepared.start_state)?;
        }
        self.ensure_checker(&group, &prepared.start_state)?;
        let checker = cached_checker(&self.cached)?;
        let preq = &prepared.request;
        if matches!(preq.planner, PlannerId::Lin | PlannerId::Circ) {
            let response = self.plan_pilz_cartesian(&prepared, checker)?;
            self.last_path = Some((group.name.clone(), response.path.clone()));
            return Ok(response);
        }
        let backend = checker.backend().name().to_string();
        let mut roadmap = self.roadmaps.last_mut().filter(|_| prepared.use_roadmap);
        let planner = match &roadmap {
            Some(_) => DRM_PLANNER.to_string(),
            None => preq.planner.as_str().to_string(),
        };
        let set = if prepared.constraints.is_empty() {
            None
        } else {
            Some(
                ConstraintSet::new(
                    &self.robot,
                    &group,
                    &prepared.start_state,
                    prepared.constraints.clone(),
                )
                .map_err(|e| ServiceError::BadPathConstraints(e.to_string()))?,
            )
        };
        let mut plan_one = |r: &PlanRequest| match (roadmap.as_mut(), &set) {
            (Some(p), _) => p.drm_mut().plan(checker, r),
            (None, Some(set)) => plan_constrained(checker, r, set),
            (None, None) => planners::plan(checker, r),
        };
        let (result, pose_error, reached_goal, ik) = match (&prepared.pose, &prepared.region) {
            (None, None) => {
                let result = plan_one(preq)?;
                let reached = result.reached_goal;
                (result, None, reached, None)
            }
            (None, Some(region)) => {
                let goal =
                    ConstraintSet::new(&self.robot, &group, &prepared.start_state, region.clone())
                        .map_err(|e| ServiceError::BadGoalConstraints(e.detail()))?;
                let opts = IkOptions {
                    seed: preq.seed,
                    ..IkOptions::default()
                };
                let solvers = std::slice::from_ref(&goal);
                let pp = plan_to_poses_with(checker, preq, solvers, &opts, plan_one)?;
                let search = PoseSearch {
                    time: pp.ik_time,
                    starts_tried: pp.starts_tried(),
                    cut: pp.ik_cut,
                };
                // The goal set is the node's own (configurations inside the region).
                (pp.result, None, 0, Some(search))
            }
            (Some(target), _) => {
                let targets = std::iter::once(target).chain(&prepared.other_poses);
                let solvers = solvers_for(&self.robot, &group, &prepared.start_state, targets)
                    .map_err(|e| ServiceError::BadPoseGoal(e.to_string()))?;
                let opts = IkOptions {
                    seed: preq.seed,
                    ..IkOptions::default()
                };
                let pp = plan_to_poses_with(checker, preq, &solvers, &opts, plan_one)?;
                let reached = prepared.other_poses.get(pp.pose.wrapping_sub(1));
                let link = self.robot.tree.links[reached.unwrap_or(target).link]
                    .name
                    .clone();
                let errors = (link, pp.goal.position_error, pp.goal.orientation_error);
                let ik = PoseSearch {
                    time: pp.ik_time,
                    starts_tried: pp.starts_tried(),
                    cut: pp.ik_cut,
                };
                // A pose goal's goal set is the node's own (its inverse kinematics
                // solutions): the goal reached is the pose's.
                (pp.result, Some(errors), pp.pose, Some(ik))
            }
        };
        let mut trajectory = result.trajectory;
        let rounded_corners = result.timing.rounded_corners();
        let link_speed = self.apply_speed_limit(
            &mut trajectory,
            (&group, &prepared.start_state),
            &prepared.speed_limit,
            &Along {
                checker,
                path: &result.path,
                timing: result.timing,
                resolution: preq.resolution,
            },
        );
        self.last_path = Some((group.name.clone(), result.path.clone()));
        Ok(ServicePlanResponse {
            trajectory,
            path: result.path,
            stats: result.stats,
            planner,
            backend,
            pose_error,
            group: group.name,
            planner_config: prepared.planner_config,
            link_speed,
            rounded_corners,
            reached_goal,
            ik,
        })
    }

    /// Plans every request of `reqs` in the current scene, each answer in its request's slot
    /// (a bad request fails alone). The requests share one checker where they can: those
    /// whose joints outside the planning group start as the first valid request's do go
    /// through [`planners::plan_many`] together (one device launch with the node's
    /// `plan_on_device` and a GPU), with the first one's options; the others (and every
    /// request of the `drm` planner, which answers from the persistent roadmap) are planned one
    /// by one as [`Self::plan`] plans them.
    pub fn plan_batch(
        &mut self,
        reqs: &[ServicePlanRequest],
    ) -> Vec<Result<ServicePlanResponse, ServiceError>> {
        let mut out: Vec<Option<Result<ServicePlanResponse, ServiceError>>> =
            (0..reqs.len()).map(|_| None).collect();
        // The shared batch: the first admitted request's options and base state.
        let mut shared: Vec<(usize, Prepared)> = Vec::new();
        let mut alone: Vec<usize> = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.prepare(req) {
                Err(e) => out[i] = Some(Err(e)),
                // Pose goals are solved for one by one (each needs its inverse kinematics),
                // as are LIN motions and goal sets. So are plans under path constraints
                // (planned on the host, one at a time).
                Ok(p)
                    if p.use_roadmap
                        || p.pose.is_some()
                        || p.region.is_some()
                        || !p.request.other_goals.is_empty()
                        || !p.constraints.is_empty()
                        || matches!(p.request.planner, PlannerId::Lin | PlannerId::Circ) =>
                {
                    alone.push(i)
                }
                Ok(p) => {
                    let fits = shared.first().is_none_or(|(_, first)| {
                        first.base == p.base && same_options(&first.request, &p.request)
                    });
                    if fits {
                        shared.push((i, p));
                    } else {
                        alone.push(i);
                    }
                }
            }
        }
        if let Some((_, first)) = shared.first() {
            let (template, base) = (first.request.clone(), first.start_state.clone());
            let group = first.group.clone();
            let ready = self.ensure_checker(&group, &base);
            match ready.and_then(|()| cached_checker(&self.cached)) {
                // Planned one by one instead, each with the error `plan` gives it.
                Err(_) => alone.extend(shared.iter().map(|(i, _)| *i)),
                Ok(checker) => {
                    let backend = checker.backend().name().to_string();
                    let ends: Vec<(Vec<f64>, Vec<f64>)> = shared
                        .iter()
                        .map(|(_, p)| (p.request.start.clone(), p.request.goal.clone()))
                        .collect();
                    let results = planners::plan_many(checker, &template, &ends);
                    for ((i, p), r) in shared.iter().zip(results) {
                        out[*i] = Some(r.map_err(ServiceError::from).map(|r| {
                            let mut trajectory = r.trajectory;
                            let rounded_corners = r.timing.rounded_corners();
                            let link_speed = self.apply_speed_limit(
                                &mut trajectory,
                                (&group, &p.start_state),
                                &p.speed_limit,
                                &Along {
                                    checker,
                                    path: &r.path,
                                    timing: r.timing,
                                    resolution: template.resolution,
                                },
                            );
                            ServicePlanResponse {
                                planner: r.planner.as_str().to_string(),
                                trajectory,
                                path: r.path,
                                stats: r.stats,
                                backend: backend.clone(),
                                pose_error: None,
                                group: group.name.clone(),
                                planner_config: p.planner_config.clone(),
                                link_speed,
                                rounded_corners,
                                reached_goal: r.reached_goal,
                                ik: None,
                            }
                        }));
                    }
                }
            }
        }
        for i in alone {
            out[i] = Some(self.plan(reqs[i].clone()));
        }
        if let Some(Ok(last)) = out.iter().rev().flatten().find(|r| r.is_ok()) {
            self.last_path = Some((last.group.clone(), last.path.clone()));
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(ServiceError::BadOption {
                        name: "batch",
                        reason: "request left unanswered".into(),
                    })
                })
            })
            .collect()
    }

    /// The checks and conversions of a request before planning: its options against the
    /// settings, its start (over the current state) and goal as group configurations.
    fn prepare(&self, req: &ServicePlanRequest) -> Result<Prepared, ServiceError> {
        let s = &self.settings;
        let group = self.request_group(req.group.as_deref())?;
        let speed_limit = self.speed_limit(req.speed_limit.as_ref(), &group, None)?;
        // The robot's ompl_planning.yaml: a configuration the request names, else (no
        // planner named, no path constraints) the group's default.
        let ompl = self.ompl();
        let requested = req.planner.as_deref().filter(|p| !p.is_empty());
        let chosen = if requested.is_none() && !req.path_constraints.is_empty() {
            None
        } else {
            crate::planners::ompl::choice(ompl, &group.name, requested).map_err(|e| {
                ServiceError::BadOption {
                    name: "planner_id",
                    reason: e.to_string(),
                }
            })?
        };
        // Path constraints without a planner named: RRT-Connect, the fastest of the planners
        // that plan under them, whatever the `planner` setting (which may be `drm`).
        let default_planner = if req.path_constraints.is_empty() {
            s.planner.as_str()
        } else {
            PlannerId::RrtConnect.as_str()
        };
        let planner_name = match &chosen {
            Some(c) => c.planner.as_str(),
            None => requested.unwrap_or(default_planner),
        };
        // `drm` answers with the persistent roadmap, searched lazily (lazy PRM).
        let use_roadmap = planner_name == DRM_PLANNER;
        let planner: PlannerId = if use_roadmap {
            PlannerId::LazyPrm
        } else {
            planner_name.parse()?
        };
        let time_limit = req.time_limit.unwrap_or(s.time_limit);
        if !(time_limit > 0.0 && time_limit <= MAX_TIME_LIMIT) {
            return Err(ServiceError::BadOption {
                name: "time_limit",
                reason: format!("must be in (0, {MAX_TIME_LIMIT}] seconds, got {time_limit}"),
            });
        }
        let (vel_scale, acc_scale) = self.scalings(req.vel_scale, req.acc_scale)?;
        if !(s.resolution > 0.0 && s.resolution.is_finite()) {
            return Err(ServiceError::BadOption {
                name: "resolution",
                reason: format!("must be positive and finite, got {}", s.resolution),
            });
        }
        let resolution = self.resolution_for(&group);
        if !(s.path_tolerance >= 0.0 && s.path_tolerance.is_finite()) {
            return Err(ServiceError::BadOption {
                name: "path_tolerance",
                reason: format!("must be finite and at least 0, got {}", s.path_tolerance),
            });
        }
        crate::planners::pose::check_ik_time_share(s.ik_time_share).map_err(|reason| {
            ServiceError::BadOption {
                name: "ik_time_share",
                reason,
            }
        })?;
        let seed = req.seed.unwrap_or(s.seed);
        let on_device = s.plan_on_device && planner == PlannerId::RrtConnect;
        let (device_extra_attempts, device_escalate_after) =
            (s.device_extra_attempts, s.device_escalate_after);
        let (attempts_name, attempts) = match req.attempts {
            Some(n) => ("num_planning_attempts", n),
            None => (
                "planning_attempts",
                i64::try_from(s.planning_attempts).unwrap_or(i64::MAX),
            ),
        };
        let attempts = usize::try_from(attempts)
            .ok()
            .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
            .ok_or_else(|| ServiceError::BadOption {
                name: attempts_name,
                reason: format!("must be in 1..={MAX_ATTEMPTS}, got {attempts}"),
            })?;
        let (start_state, start) = self.start_of(&req.start, &group)?;

        // Goal: every group joint given; goal values of joints outside the group are
        // ignored (they hold their start values), as PlanPath documents. A named state gives
        // them from the SRDF.
        let named = match req.goal_name.as_deref().filter(|n| !n.is_empty()) {
            Some(name) => {
                if !(req.goal.0.is_empty() && req.goal.1.is_empty()) || req.goal_pose.is_some() {
                    return Err(ServiceError::BadJointList {
                        which: "goal",
                        message: format!(
                            "give one goal: joint positions, a pose or a named state, not the \
                             named state '{name}' and another"
                        ),
                    });
                }
                let named = self.robot.named_state(&group.name, name);
                Some(named.map_err(|message| ServiceError::BadJointList {
                    which: "goal",
                    message,
                })?)
            }
            None => None,
        };
        let (names, positions) = named.as_ref().unwrap_or(&req.goal);
        let region_given = !req.goal_constraints.is_empty();
        if region_given {
            let other = if !(names.is_empty() && positions.is_empty()) {
                Some("goal joint positions or a named state")
            } else if req.goal_pose.is_some() {
                Some("a goal pose")
            } else if !(req.other_goals.is_empty() && req.other_goal_poses.is_empty()) {
                Some("other goals")
            } else if matches!(planner, PlannerId::Lin | PlannerId::Circ) {
                Some("a LIN or CIRC motion (they move to one goal pose)")
            } else {
                None
            };
            if let Some(other) = other {
                return Err(ServiceError::BadGoalConstraints(format!(
                    "give one goal: goal constraints (a goal region) or {other}, not both"
                )));
            }
        }
        let (goal, pose) = match &req.goal_pose {
            _ if region_given => (Vec::new(), None),
            Some(pg) => {
                if !(names.is_empty() && positions.is_empty()) {
                    return Err(ServiceError::BadPoseGoal(
                        "give either goal joint positions or a goal pose, not both".into(),
                    ));
                }
                (
                    Vec::new(),
                    Some(self.pose_target(pg, &group, &start_state)?),
                )
            }
            None => {
                let (goal_state, goal_given) =
                    self.apply_named("goal", &start_state, names, positions)?;
                let goal = Self::group_config("goal", &group, &goal_state, &goal_given)?;
                (goal, None)
            }
        };

        // A CIRC motion's path constraints carry its circle's point, not constraints.
        let (constraints, circ) = if planner == PlannerId::Circ {
            let point = self.circ_point(&req.path_constraints, &start_state)?;
            (PathConstraints::default(), Some(point))
        } else {
            (
                self.path_constraints(&req.path_constraints, &start_state)?,
                None,
            )
        };
        if !constraints.is_empty() && use_roadmap {
            return Err(ServiceError::BadPathConstraints(format!(
                "the {DRM_PLANNER} planner does not plan under path constraints; use rrt_connect, \
                 rrt, rrt_star, prm or lazy_prm"
            )));
        }

        let region = if region_given {
            let goal = self.constraints_in_planning_frame(&req.goal_constraints, &start_state);
            let region = goal.map_err(|e| ServiceError::BadGoalConstraints(e.detail()))?;
            Some(region.and(&constraints))
        } else {
            None
        };
        let other_goals = self.other_goals(req, &group, &start_state, planner)?;
        let other_poses = self.other_goal_poses(req, &group, &start_state, planner)?;
        let mut preq = PlanRequest::new(start, goal, planner);
        preq.other_goals = other_goals;
        preq.group = group.name.clone();
        preq.time_limit = Duration::from_secs_f64(time_limit);
        preq.seed = seed;
        preq.resolution = resolution;
        preq.vel_scale = vel_scale;
        preq.acc_scale = acc_scale;
        preq.path_tolerance = s.path_tolerance;
        preq.ik_time_share = s.ik_time_share;
        preq.attempts = attempts;
        // Plans under path constraints run on the host.
        preq.on_device = on_device && constraints.is_empty();
        preq.device_extra_attempts = device_extra_attempts;
        preq.device_escalate_after = Some(device_escalate_after);
        if let Some(c) = &chosen {
            c.apply(&mut preq);
        }
        Ok(Prepared {
            request: preq,
            base: Self::masked_base(&group, &start_state),
            start_state,
            use_roadmap,
            pose,
            other_poses,
            region,
            constraints,
            group,
            planner_config: chosen.map(|c| c.name),
            speed_limit,
            circ,
        })
    }

    /// The group configurations of the request's other goals (see
    /// [`ServicePlanRequest::other_goals`]), each a full goal of `group` from `start_state`.
    fn other_goals(
        &self,
        req: &ServicePlanRequest,
        group: &PlanningGroup,
        start_state: &[f64],
        planner: PlannerId,
    ) -> Result<Vec<Vec<f64>>, ServiceError> {
        if req.other_goals.is_empty() {
            return Ok(Vec::new());
        }
        let refuse = |reason: String| ServiceError::BadOption {
            name: "other_goal_states",
            reason,
        };
        if req.goal_pose.is_some() {
            return Err(refuse(
                "other goal states go with a goal state or a named state, not a goal pose \
                 (its inverse kinematics solutions already make a goal set)"
                    .into(),
            ));
        }
        if matches!(planner, PlannerId::Lin | PlannerId::Circ) {
            return Err(refuse(format!(
                "{planner} moves to one goal, not a goal set"
            )));
        }
        let mut out = Vec::with_capacity(req.other_goals.len());
        for (index, (names, positions)) in req.other_goals.iter().enumerate() {
            let goal = self
                .apply_named("goal", start_state, names, positions)
                .and_then(|(state, given)| Self::group_config("goal", group, &state, &given))
                .map_err(|e| ServiceError::BadOtherGoal {
                    index,
                    source: Box::new(e),
                })?;
            out.push(goal);
        }
        Ok(out)
    }

    /// The targets of the request's other goal poses (see
    /// [`ServicePlanRequest::other_goal_poses`]), each placed as the goal pose is.
    fn other_goal_poses(
        &self,
        req: &ServicePlanRequest,
        group: &PlanningGroup,
        start_state: &[f64],
        planner: PlannerId,
    ) -> Result<Vec<PoseTarget>, ServiceError> {
        if req.other_goal_poses.is_empty() {
            return Ok(Vec::new());
        }
        let refuse = |reason: String| ServiceError::BadOption {
            name: "other_goal_poses",
            reason,
        };
        if req.goal_pose.is_none() {
            return Err(refuse(
                "other goal poses go with a goal pose, not with goal joint positions or a named \
                 state (give those as other goal states)"
                    .into(),
            ));
        }
        if matches!(planner, PlannerId::Lin | PlannerId::Circ) {
            return Err(refuse(format!(
                "{planner} moves to one goal, not a goal set"
            )));
        }
        if req.other_goal_poses.len() >= MAX_GOAL_POSES {
            return Err(refuse(format!(
                "{} other goal poses: at most {} beside goal_pose",
                req.other_goal_poses.len(),
                MAX_GOAL_POSES - 1
            )));
        }
        req.other_goal_poses
            .iter()
            .enumerate()
            .map(|(index, pg)| {
                self.pose_target(pg, group, start_state)
                    .map_err(|e| match e {
                        ServiceError::BadPoseGoal(message) => {
                            ServiceError::BadOtherGoalPose { index, message }
                        }
                        other => other,
                    })
            })
            .collect()
    }

    /// The named states of planning group `group` (`None` or empty: the settings' group): the
    /// SRDF's `group_state` names for it, sorted.
    pub fn named_states(&self, group: Option<&str>) -> Result<Vec<String>, ServiceError> {
        Ok(self.robot.named_states(&self.request_group(group)?.name))
    }

    /// The path constraints of `spec` in the planning frame, their frames taken where
    /// `start_state` puts the robot's links (and at the latest transforms).
    fn path_constraints(
        &self,
        spec: &ConstraintSpec,
        start_state: &[f64],
    ) -> Result<PathConstraints, ServiceError> {
        self.constraints_in_planning_frame(spec, start_state)
            .map_err(|e| ServiceError::BadPathConstraints(e.to_string()))
    }

    /// The constraints of `spec` in the planning frame (path or goal constraints), their
    /// frames taken where `start_state` puts the robot's links (and at the latest
    /// transforms); the error says what is wrong.
    fn constraints_in_planning_frame(
        &self,
        spec: &ConstraintSpec,
        start_state: &[f64],
    ) -> Result<PathConstraints, ConstraintError> {
        spec.resolve(&self.robot.tree, |frame| {
            self.in_planning_frame(frame, Isometry3::identity(), start_state)
        })
    }

    /// The full start state (the current state overridden by `start`'s joints, or the current
    /// state when `start` is `None`) and its group configuration.
    fn start_of(
        &self,
        start: &Option<(Vec<String>, Vec<f64>)>,
        group: &PlanningGroup,
    ) -> Result<(Vec<f64>, Vec<f64>), ServiceError> {
        let (start_state, start_given) = match start {
            Some((names, positions)) => {
                let (state, mut given) =
                    self.apply_named("start", &self.current, names, positions)?;
                if self.has_current {
                    given.iter_mut().for_each(|g| *g = true);
                }
                (state, given)
            }
            None => {
                if !self.has_current {
                    return Err(ServiceError::NoCurrentState);
                }
                (self.current.clone(), vec![true; self.current.len()])
            }
        };
        let start = Self::group_config("start", group, &start_state, &start_given)?;
        Ok((start_state, start))
    }

    /// The robot's `ompl_planning.yaml` where the settings use it, else an empty one.
    fn ompl(&self) -> &OmplPlanning {
        static NONE: OmplPlanning = OmplPlanning {
            source: String::new(),
            configs: std::collections::BTreeMap::new(),
            groups: std::collections::BTreeMap::new(),
            warnings: Vec::new(),
        };
        if self.settings.ompl_planning {
            &self.robot.ompl
        } else {
            &NONE
        }
    }

    /// The motion check step for `group`: the `resolution` setting, or the group's
    /// `longest_valid_segment_fraction` step where that is finer ([`Self::ompl`]).
    pub(crate) fn resolution_for(&self, group: &PlanningGroup) -> f64 {
        crate::planners::ompl::resolution(self.ompl(), group, self.settings.resolution)
    }

    /// A request's speed limit checked: the link (named, else `default_link`, else the group's
    /// tip) and the speed; errors name the field.
    pub(crate) fn speed_limit(
        &self,
        limit: Option<&SpeedLimit>,
        group: &PlanningGroup,
        default_link: Option<usize>,
    ) -> Result<Option<LinkLimit>, ServiceError> {
        let Some(limit) = limit else {
            return Ok(None);
        };
        if !(limit.max_speed.is_finite() && limit.max_speed > 0.0) {
            return Err(ServiceError::BadOption {
                name: "max_cartesian_speed",
                reason: format!("must be positive and finite (m/s), got {}", limit.max_speed),
            });
        }
        let link = match (
            limit.link.as_deref().filter(|l| !l.is_empty()),
            default_link,
        ) {
            (None, Some(link)) => link,
            (name, _) => {
                self.link_or_tip(name, group)
                    .map_err(|reason| ServiceError::BadOption {
                        name: "cartesian_speed_limited_link",
                        reason,
                    })?
            }
        };
        Ok(Some(LinkLimit::speed(
            link,
            &self.robot.tree.links[link].name,
            limit.max_speed,
        )))
    }

    /// Slows `traj` (of `group`, the other joints at `state`) to a checked speed limit, where
    /// it is too fast along the path it was timed from.
    pub(crate) fn apply_speed_limit(
        &self,
        traj: &mut Trajectory,
        (group, state): (&PlanningGroup, &[f64]),
        limit: &Option<LinkLimit>,
        along: &Along<'_>,
    ) -> Option<LinkSpeed> {
        Some(trajectory::limit_link_speed(
            traj,
            &self.robot.tree,
            group,
            state,
            limit.as_ref()?,
            Some(along),
        ))
    }

    /// The link named `link`, or `group`'s tip link when `None`; the error says why not.
    fn link_or_tip(&self, link: Option<&str>, group: &PlanningGroup) -> Result<usize, String> {
        match link {
            Some(name) => self
                .robot
                .tree
                .link(name)
                .map_err(|_| format!("the robot has no link '{name}'")),
            None => ik::default_tip_link(&self.robot, group)
                .ok_or_else(|| format!("group '{}' has no tip link; name the link", group.name)),
        }
    }

    /// `pose`, given in `frame` (the planning frame, also when empty, a robot link taken
    /// where `start_state` puts it, or a frame of the transforms, see
    /// [`Self::set_transforms`], at their latest), in the planning frame; the error says why
    /// not.
    fn in_planning_frame(
        &self,
        frame: &str,
        pose: Isometry3<f64>,
        start_state: &[f64],
    ) -> Result<Isometry3<f64>, String> {
        self.in_planning_frame_at(frame, pose, start_state, None)
    }

    /// [`Self::in_planning_frame`] with the transforms taken at `stamp` (`None`: their
    /// latest).
    fn in_planning_frame_at(
        &self,
        frame: &str,
        pose: Isometry3<f64>,
        start_state: &[f64],
        stamp: Option<StampNs>,
    ) -> Result<Isometry3<f64>, String> {
        let planning = self.settings.planning_frame.as_str();
        let frame = frame.strip_prefix('/').unwrap_or(frame);
        if frame.is_empty() || frame == planning {
            return Ok(pose);
        }
        let tree = &self.robot.tree;
        if let Ok(f) = tree.link(frame) {
            return Ok(tree.forward_kinematics(start_state)[f] * pose);
        }
        let unknown = |why: String| {
            format!(
                "frame '{frame}' is neither the planning frame '{planning}' nor a link of the \
                 robot{why}"
            )
        };
        let Some(transforms) = &self.transforms else {
            return Err(unknown(String::new()));
        };
        let tf = transforms
            .read()
            .map_err(|_| unknown(", and the transforms are unavailable".into()))?;
        if !tf.has_frame(frame) {
            return Err(unknown(
                ", and no transform on /tf or /tf_static names it".into(),
            ));
        }
        let via_tf = |target: &str| {
            tf.lookup(target, frame, stamp)
                .map_err(|e| unknown(format!(", and /tf does not place it: {e}")))
        };
        // The nearest ancestor the planner knows: a link where the joint state puts it (a
        // camera on the wrist moves with the arm as the collision model does), or the
        // planning frame.
        for ancestor in tf.ancestors(frame) {
            if ancestor == planning {
                return Ok(via_tf(planning)? * pose);
            }
            if let Ok(l) = tree.link(&ancestor) {
                let link = tree.forward_kinematics(start_state)[l];
                return Ok(link * via_tf(&ancestor)? * pose);
            }
        }
        // Otherwise the planning frame may sit below a common ancestor (`map`).
        Ok(via_tf(planning)? * pose)
    }

    /// The target of a pose goal for `group`, its pose in the planning frame (a link frame
    /// is taken at `start_state`); errors name what is wrong.
    fn pose_target(
        &self,
        pg: &ServicePoseGoal,
        group: &PlanningGroup,
        start_state: &[f64],
    ) -> Result<PoseTarget, ServiceError> {
        let bad = |m: String| ServiceError::BadPoseGoal(m);
        let link = self.link_or_tip(pg.link.as_deref(), group).map_err(bad)?;
        let pose = ik::pose_from_parts(pg.position, pg.orientation, "pose")
            .map_err(|e| bad(e.to_string()))?;
        let pose = self
            .in_planning_frame(&pg.frame, pose, start_state)
            .map_err(bad)?;
        let position_tolerance = pg
            .position_tolerance
            .unwrap_or(ik::DEFAULT_POSITION_TOLERANCE);
        let orientation_tolerance = pg
            .orientation_tolerance
            .unwrap_or(ik::DEFAULT_ORIENTATION_TOLERANCE);
        for (name, v) in [
            ("position tolerance", position_tolerance),
            ("orientation tolerance", orientation_tolerance),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(bad(format!("{name} must be positive and finite, got {v}")));
            }
        }
        Ok(PoseTarget {
            link,
            pose,
            position_tolerance,
            // A group whose kinematics.yaml says position_only_ik leaves orientation free.
            orientation_tolerance: pg
                .orientation
                .filter(|_| !self.robot.position_only_ik(&group.name))
                .map(|_| orientation_tolerance),
        })
    }

    /// What [`GpuWarmUp::run`] needs to build the CUDA side of this service's backend for its
    /// robot, group and current (or neutral) state on another thread; `None` for the `cpu`
    /// backend.
    pub fn gpu_warm_up(&self) -> Result<Option<GpuWarmUp>, ServiceError> {
        if self.settings.backend == "cpu" {
            return Ok(None);
        }
        let group = self.group()?;
        Ok(Some(GpuWarmUp {
            robot: self.robot.clone(),
            base: self.current.clone(),
            group,
            backend: self.settings.backend.clone(),
            shapes: self.settings.shapes,
        }))
    }

    /// Makes `self.cached` the checker for the current scene, `group` and base state,
    /// rebuilt only when one of them (or the backend) changed.
    fn ensure_checker(&mut self, group: &PlanningGroup, base: &[f64]) -> Result<(), ServiceError> {
        let revision = self.scene.revision();
        let backend = self.settings.backend.clone();
        let shapes = self.settings.shapes;
        // Group joints are overwritten by every checked configuration, so only the values
        // of the other joints make a base state different.
        let base = Self::masked_base(group, base);
        let base = base.as_slice();
        let fresh = self.cached.as_ref().is_some_and(|c| {
            c.revision == revision
                && c.base == base
                && c.backend == backend
                && c.shapes == shapes
                && c.group == group.name
        });
        if !fresh {
            self.cached = None;
            let checker = self
                .world_checker(
                    &backend,
                    group,
                    base,
                    CheckerOptions {
                        shapes,
                        ..CheckerOptions::default()
                    },
                )
                .map_err(|source| ServiceError::Checker {
                    backend: backend.clone(),
                    source,
                })?;
            self.checker_builds += 1;
            self.cached = Some(CachedChecker {
                revision,
                base: base.to_vec(),
                backend,
                shapes,
                group: group.name.clone(),
                checker,
            });
        }
        Ok(())
    }
}
