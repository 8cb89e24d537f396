//! The ROS 2 node (`planner_node`), built on r2r. The only module that names r2r.
//!
//! The node is async: every subscription, service and the parameter event stream is a
//! futures `Stream` consumed by a task of its own, and a blocking task spins the rcl
//! node. SIGINT or SIGTERM stops the spin task, which drops the node; every stream then
//! ends and its task returns, and [`run`] joins them all before returning.
//!
//! Interfaces (names relative to the node, `~/` = `/planner_node/` by default):
//!
//! | kind         | name                | type                                   |
//! |--------------|---------------------|----------------------------------------|
//! | subscription | `joint_states`      | `sensor_msgs/JointState`               |
//! | subscription | `robot_description` | `std_msgs/String` (transient local; the URDF while no parameter names one) |
//! | subscription | `~/obstacles`       | `visualization_msgs/MarkerArray`       |
//! | subscription | `~/goal`            | `sensor_msgs/JointState` (plan from the current state, publish) |
//! | subscription | `~/points`          | `sensor_msgs/PointCloud2` (sensor QoS; boxes of the scene, see [`PlanningService::set_point_cloud`]) |
//! | subscription | `~/goal_pose`       | `geometry_msgs/PoseStamped` (plan the group's tip link there from the current state, publish) |
//! | publisher    | `~/trajectory`      | `trajectory_msgs/JointTrajectory`      |
//! | publisher    | `~/scene`           | `visualization_msgs/MarkerArray` (transient local) |
//! | publisher    | `~/roadmap`         | `visualization_msgs/MarkerArray` (transient local) |
//! | service      | `~/plan`            | `gpu_motion_planner_interfaces/PlanPath` |
//! | service      | `~/plan_batch`      | `gpu_motion_planner_interfaces/PlanBatch` (many problems, one launch on the GPU) |
//! | service      | `~/plan_sequence`   | `gpu_motion_planner_interfaces/PlanSequence` (motions one after another, joined, blended where a motion gives a `blend_radius`) |
//! | service      | `~/plan_cartesian`  | `gpu_motion_planner_interfaces/PlanCartesian` (straight lines of a link through poses) |
//! | service      | `~/attach_object`   | `gpu_motion_planner_interfaces/AttachObject` (an obstacle or a new shape moves with a link) |
//! | service      | `~/detach_object`   | `gpu_motion_planner_interfaces/DetachObject` (put it down, or drop it) |
//! | service      | `~/load_scene`      | `gpu_motion_planner_interfaces/LoadScene` (a scene file or text replaces or joins the planning scene, see [`scene_io`]) |
//! | service      | `~/save_scene`      | `gpu_motion_planner_interfaces/SaveScene` (the planning scene as a scene file) |
//! | service      | `~/allow_collisions` | `gpu_motion_planner_interfaces/AllowCollisions` (links that may touch an obstacle or each other, see [`acm`]) |
//! | subscription | `~/occupancy_grid`  | `nav_msgs/OccupancyGrid` (for `~/plan_agents`) |
//! | publisher    | `~/agent_paths`     | `visualization_msgs/MarkerArray` (grid paths) |
//! | service      | `~/plan_agents`     | `gpu_motion_planner_interfaces/PlanAgents` |
//! | service      | `~/clear_roadmap`   | `std_srvs/Trigger` (drops the `drm` roadmap) |
//! | service      | `~/rebuild_roadmap` | `std_srvs/Trigger` (builds it now)     |
//! | service      | `~/execute`         | `std_srvs/Trigger` (send the last planned trajectory to the controller, see [`execute`]) |
//! | service      | `~/execute_trajectory` | `gpu_motion_planner_interfaces/ExecuteTrajectory` (send a given trajectory, as `~/execute` does) |
//! | service      | `~/stop`            | `std_srvs/Trigger` (cancel the running execution) |
//! | service, topics | `~/goal_marker/get_interactive_markers`, `~/goal_marker/update`, `~/goal_marker/feedback` | an interactive marker server (RViz's InteractiveMarkers display): a handle for a group's tip link that plans there when let go, the group picked from its menu, see [`goal_marker`] |
//! | action server | `~/move`           | `gpu_motion_planner_interfaces/Move` (plan from the current state and execute, see [`move_goal`]) |
//! | action client | `controller_action` (`joint_trajectory_controller/follow_joint_trajectory`), or one per controller of `controllers_file` (`<name>/<action_ns>`) | `control_msgs/FollowJointTrajectory` (`execution_mode: action`) |
//! | publisher    | `joint_trajectory_controller/joint_trajectory`, or one per controller of `controllers_file` (`<name>/joint_trajectory`) | `trajectory_msgs/JointTrajectory` (`execution_mode: topic`) |
//! | subscription | `/tf`, `/tf_static` | `tf2_msgs/TFMessage` (frames of clouds, markers and poses the robot does not know) |
//! | parameters   | see [`params::NodeParams`] and `config/planner.yaml`       |
//!
//! The engine state lives in a [`PlanningService`] (plain Rust, tested without ROS); this
//! module only converts messages. Planning runs on the calling worker thread through
//! `block_in_place`, so the other tasks keep running while a plan is computed. A robot
//! that cannot be loaded leaves the node up, answering `~/plan` with the reason, until a
//! robot parameter is set to something loadable.

pub mod acm;
pub mod agents;
pub mod attach;
pub mod cartesian;
pub mod cloud;
pub mod controllers;
pub mod execute;
pub mod goal_marker;
pub mod kinematics;
pub mod markers;
pub mod mock_controller;
pub mod move_goal;
pub mod params;
pub mod plan;
pub mod scene_io;
pub mod sequence;
pub mod state;
pub mod tf;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use r2r::geometry_msgs::msg::PoseStamped;
use r2r::gpu_motion_planner_interfaces::srv::{
    AllowCollisions, AttachObject, CheckState, CheckTrajectory, ComputeFk, ComputeIk, DetachObject,
    ExecuteTrajectory, LoadScene, PlanAgents, PlanBatch, PlanCartesian, PlanPath, PlanSequence,
    SaveScene,
};
use r2r::nav_msgs::msg::OccupancyGrid;
use r2r::sensor_msgs::msg::{JointState, PointCloud2};
use r2r::std_srvs::srv::Trigger;
use r2r::tf2_msgs::msg::TFMessage;
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::visualization_msgs::msg::{
    InteractiveMarkerFeedback, InteractiveMarkerUpdate, MarkerArray,
};
use r2r::visualization_msgs::srv::GetInteractiveMarkers;
use r2r::QosProfile;

use crate::robot::RobotModel;
use crate::scene::Scene;
use crate::service::agents::{AgentsService, AgentsSettings};
use crate::service::{PlanningService, ServicePlanRequest};
use crate::tf::SharedTf;

pub use execute::CONTROLLER_TOPIC;
pub use params::NodeParams;

/// Default node name (can be remapped with `--ros-args -r __node:=NAME`).
pub const NODE_NAME: &str = "planner_node";

/// How long one `spin_once` waits for work; bounds the shutdown latency.
const SPIN_PERIOD: Duration = Duration::from_millis(50);

/// How long shutdown waits for the stream tasks to notice that the node is gone.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Errors that stop the node from starting.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// rcl/r2r refused to create the context, node, a subscription or a service.
    #[error("ROS: {0}")]
    Ros(#[from] r2r::Error),
    /// The tokio runtime or the signal handlers could not be set up.
    #[error("runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// A parameter the node cannot start without is missing or wrong.
    #[error("{0}")]
    Config(String),
}

/// The last trajectory published on `~/trajectory`, with the request that planned it.
#[derive(Debug, Clone)]
pub struct LastPlan {
    /// What `~/execute` sends.
    pub trajectory: JointTrajectory,
    /// The plan request of `~/plan`, `~/goal` or `~/goal_pose` that made it, which replanning
    /// after a stop plans again ([`ServicePlanRequest::replan_to`]); `None` for a Cartesian
    /// path.
    pub request: Option<ServicePlanRequest>,
}

/// State shared between the node's tasks.
#[derive(Debug)]
pub struct Shared {
    /// Validated parameters the node works from.
    pub params: Mutex<NodeParams>,
    /// The joint state received on `joint_states`, every message merged in by joint name
    /// ([`state::merge_joint_state`]: several drivers may publish their own joints); handed
    /// to the service when a plan starts, so that a running plan never holds up the
    /// subscription.
    pub joint_state: Mutex<Option<JointState>>,
    /// The engine, or why the robot could not be loaded.
    pub service: Mutex<Result<PlanningService, String>>,
    /// The many-agent grid planner and its last map.
    pub agents: Mutex<AgentsService>,
    /// The last trajectory published on `~/trajectory`, which `~/execute` sends.
    pub last_plan: Mutex<Option<LastPlan>>,
    /// The `robot_description` parameter holds the URDF last received on the
    /// `robot_description` topic (not one a user set).
    pub description_from_topic: AtomicBool,
    /// Transforms from `/tf` and `/tf_static`, which the service resolves unknown frames with.
    pub transforms: SharedTf,
    /// The execution `~/execute` runs, for `~/stop`.
    pub execution: execute::Execution,
}

/// A planning service for the robot named by `params`, loaded before by
/// [`NodeParams::load_robot`] (`loaded`: without holding the service, as splitting link
/// meshes into parts takes seconds), keeping the obstacles of `old` (without one: in the scene
/// of `scene_path` when one is named), resolving frames the robot does not know with
/// `transforms`.
fn make_service(
    params: &NodeParams,
    loaded: Result<(RobotModel, Scene), String>,
    old: Option<&PlanningService>,
    transforms: &SharedTf,
) -> Result<PlanningService, String> {
    let (robot, scene) = loaded?;
    let scene = match old {
        Some(s) => {
            // The obstacles and the carried objects stay (attached again to the new robot).
            let mut scene = s.scene().clone();
            for o in s.attached_objects() {
                scene
                    .attach(o.clone())
                    .map_err(|e| format!("attached object '{}': {e}", o.id))?;
            }
            scene
        }
        None => scene,
    };
    let mut service = PlanningService::new(robot, scene, params.service_settings());
    service.set_transforms(transforms.clone());
    if old.is_none() && !params.scene_path.is_empty() {
        scene_io::load_file(&mut service, &params.scene_path, false)
            .map_err(|e| format!("scene_path: {e}"))?;
    }
    Ok(service)
}

/// Puts the goal marker on the planning group's tip link where the current joint state has
/// it and publishes the update on `updates`; without a robot it stays where it is. Its
/// menus follow the robot loaded (its groups and named states; the whole marker goes out
/// when they changed).
fn marker_on_tip(
    shared: &Shared,
    logger: &str,
    marker: &Mutex<goal_marker::GoalMarker>,
    updates: &r2r::Publisher<InteractiveMarkerUpdate>,
) {
    let group = lock(marker).group().map(str::to_string);
    let found = with_service(
        shared,
        logger,
        |_| None,
        |s| marker_menus(s, group.as_deref()),
    );
    let Some(((_, pose), (groups, current, states))) = found else {
        return;
    };
    let frame = lock(&shared.params).planning_frame.clone();
    let mut m = lock(marker);
    let update = if m.set_menus(groups, &current, states) {
        m.moved_whole(&frame, markers::pose_msg(&pose), NODE_NAME)
    } else {
        m.moved(&frame, markers::pose_msg(&pose), NODE_NAME)
    };
    drop(m);
    publish(updates, &update, logger, "~/goal_marker/update");
}

/// A tip link and its pose in the planning frame.
type Tip = (String, nalgebra::Isometry3<f64>);

/// The goal marker's menus: the groups a pose goal can move, the planning group's name, and
/// the named states offered.
type MarkerMenus = (Vec<String>, String, Vec<String>);

/// The goal marker's tip (link and pose) for `group` (`None`: the planning group), and its
/// menus: the groups a pose goal can move, the planning group's name and `group`'s named
/// states. `None` where the service cannot say (no such group).
fn marker_menus(s: &PlanningService, group: Option<&str>) -> Option<(Tip, MarkerMenus)> {
    let tip = s.tip_pose_of(group).ok()?;
    let states = s.named_states(group).ok()?;
    Some((tip, (s.pose_goal_groups(), s.group().ok()?.name, states)))
}

/// Loads scene file `path` (the `scene_path` parameter set while the node runs) into the
/// planning scene, replacing it, and republishes the scene and the roadmap on `outputs`.
/// Without a robot it is only recorded (loaded with the robot). Whether it was taken; a file
/// that cannot be loaded is logged and changes nothing.
fn load_scene_path(
    shared: &Shared,
    logger: &str,
    outputs: (&r2r::Publisher<MarkerArray>, &r2r::Publisher<MarkerArray>),
    path: &str,
) -> bool {
    // The file is read (and its meshes split) before the service is taken; read again
    // where the split setting changed meanwhile.
    let read = with_service(shared, logger, |_| None, |s| Some(scene_io::options(s))).map(|o| {
        (
            o,
            tokio::task::block_in_place(|| scene_io::read_file(path, &o)),
        )
    });
    let loaded: Result<_, String> = with_service(
        shared,
        logger,
        |_| Ok(None),
        |s| {
            let load = match read {
                Some((o, scene)) if o == scene_io::options(s) => {
                    scene_io::apply_file(s, path, scene?, false)?
                }
                _ => scene_io::load_file(s, path, false)?,
            };
            relabel_roadmap(s, logger, "scene_path");
            Ok(Some(load))
        },
    );
    match loaded {
        Ok(Some(load)) => {
            let what = scene_io::describe(&load, path, false);
            r2r::log_info!(logger, "scene_path: loaded {what}");
            republish(shared, logger, outputs, true, true);
            true
        }
        Ok(None) => {
            r2r::log_info!(
                logger,
                "scene_path: no robot loaded yet; loaded with the robot"
            );
            true
        }
        Err(e) => {
            r2r::log_error!(logger, "scene_path: {e}; keeping the scene");
            false
        }
    }
}

/// The `~/roadmap` message: the persistent roadmap with its labels and the last path
/// (only a DELETEALL when no robot is loaded).
fn roadmap_message(shared: &Shared, logger: &str) -> MarkerArray {
    let frame = lock(&shared.params).planning_frame.clone();
    let view = match &*lock(&shared.service) {
        Ok(service) => service.roadmap_view().unwrap_or_else(|e| {
            r2r::log_warn!(logger, "~/roadmap: {e}");
            Default::default()
        }),
        Err(_) => Default::default(),
    };
    markers::roadmap_array(&view, &frame)
}

/// Publishes `msg` on `publisher`, logging a failure under `topic`.
fn publish<T: r2r::WrappedTypesupport + 'static>(
    publisher: &r2r::Publisher<T>,
    msg: &T,
    logger: &str,
    topic: &str,
) {
    if let Err(e) = publisher.publish(msg) {
        r2r::log_warn!(logger, "{topic}: could not publish: {e}");
    }
}

/// The publishers a successful plan feeds.
#[derive(Clone)]
pub struct PlanOutputs {
    /// `~/trajectory`.
    pub trajectory: r2r::Publisher<JointTrajectory>,
    /// `~/roadmap`.
    pub roadmap: r2r::Publisher<MarkerArray>,
}

/// Runs one plan request against the service (the latest joint state first) and answers
/// it as a `PlanPath` response; on success publishes the trajectory and the roadmap view.
fn serve_plan(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    request: &PlanPath::Request,
) -> PlanPath::Response {
    plan_and_publish(
        shared,
        logger,
        outputs,
        &plan::service_request(request),
        None,
    )
}

/// Plans a goal that came on a topic (`~/goal`, `~/goal_pose`, the goal marker) as
/// [`serve_plan`] does, and logs the outcome under `topic`.
fn plan_topic_goal(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    topic: &str,
    request: &PlanPath::Request,
) {
    let response = serve_plan(shared, logger, outputs, request);
    if response.success {
        r2r::log_info!(logger, "{topic}: {}", response.message);
    } else {
        r2r::log_warn!(
            logger,
            "{topic}: no plan (error_code {}): {}",
            response.error_code,
            response.message
        );
    }
}

/// Plans `request` and, on success, publishes the trajectory and the roadmap view, keeping
/// `kept` (or `request` itself) as the request that planned it (for replanning).
fn plan_and_publish(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    request: &ServicePlanRequest,
    kept: Option<&ServicePlanRequest>,
) -> PlanPath::Response {
    let response = with_service(shared, logger, plan::no_robot, |service| {
        let outcome = service.plan(request.clone());
        plan::response(&outcome, request, service)
    });
    if response.success {
        let kept = kept.unwrap_or(request).clone();
        publish_plan(shared, logger, outputs, &response.trajectory, Some(kept));
    }
    response
}

/// Publishes a planned trajectory on `~/trajectory` with the roadmap view, and keeps it (and
/// the request that planned it, if any) for `~/execute`.
fn publish_plan(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    trajectory: &JointTrajectory,
    request: Option<ServicePlanRequest>,
) {
    *lock(&shared.last_plan) = Some(LastPlan {
        trajectory: trajectory.clone(),
        request,
    });
    publish(&outputs.trajectory, trajectory, logger, "~/trajectory");
    let view = roadmap_message(shared, logger);
    publish(&outputs.roadmap, &view, logger, "~/roadmap");
}

/// Runs `f` on the service (blocking this worker thread) after giving it the latest joint
/// state; `refused` answers when no robot is loaded (with the reason).
fn with_service<T>(
    shared: &Shared,
    logger: &str,
    refused: impl FnOnce(&str) -> T,
    f: impl FnOnce(&mut PlanningService) -> T,
) -> T {
    let current = lock(&shared.joint_state).clone();
    tokio::task::block_in_place(|| on_service(lock(&shared.service), current, logger, refused, f))
}

/// As [`with_service`], but `None` at once when the service is busy (a plan holds it):
/// for a watcher that looks again soon and must not wait behind a long plan.
fn try_with_service<T>(
    shared: &Shared,
    logger: &str,
    refused: impl FnOnce(&str) -> T,
    f: impl FnOnce(&mut PlanningService) -> T,
) -> Option<T> {
    let current = lock(&shared.joint_state).clone();
    tokio::task::block_in_place(|| {
        let guard = match shared.service.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(on_service(guard, current, logger, refused, f))
    })
}

/// Runs `f` on the locked service after giving it the joint state `current`.
fn on_service<T>(
    mut guard: MutexGuard<'_, Result<PlanningService, String>>,
    current: Option<JointState>,
    logger: &str,
    refused: impl FnOnce(&str) -> T,
    f: impl FnOnce(&mut PlanningService) -> T,
) -> T {
    let service = match guard.as_mut() {
        Ok(s) => s,
        Err(reason) => return refused(reason),
    };
    if let Some(js) = &current {
        if let Err(e) = service.set_joint_state(&js.name, &js.position) {
            r2r::log_warn!(logger, "joint_states: {e}; message ignored");
        }
    }
    f(service)
}

/// After a scene change: publishes `~/scene` (when `scene`) and `~/roadmap` (when
/// `roadmap`) on `(scene publisher, roadmap publisher)`.
fn republish(
    shared: &Shared,
    logger: &str,
    (scene_pub, roadmap_pub): (&r2r::Publisher<MarkerArray>, &r2r::Publisher<MarkerArray>),
    scene: bool,
    roadmap: bool,
) {
    if scene {
        publish(scene_pub, &scene_message(shared), logger, "~/scene");
    }
    if roadmap {
        publish(
            roadmap_pub,
            &roadmap_message(shared, logger),
            logger,
            "~/roadmap",
        );
    }
}

/// Brings the persistent roadmap's labels up to date with a changed scene, logging under
/// `topic`; whether it changed.
fn relabel_roadmap(service: &mut PlanningService, logger: &str, topic: &str) -> bool {
    match service.update_roadmap() {
        Ok(Some(stats)) => {
            r2r::log_info!(
                logger,
                "{topic}: roadmap updated, {} edges relabelled in {:.3} ms",
                stats.relabelled,
                (stats.drm_time + stats.rgg_time).as_secs_f64() * 1e3
            );
            true
        }
        Ok(None) => false,
        Err(e) => {
            r2r::log_error!(logger, "{topic}: roadmap update failed: {e}");
            false
        }
    }
}

/// Answers a `~/plan_batch` request (nothing is published).
fn serve_batch(shared: &Shared, logger: &str, request: &PlanBatch::Request) -> PlanBatch::Response {
    with_service(
        shared,
        logger,
        |reason| plan::batch_refused(format!("no robot loaded: {reason}")),
        |service| match plan::batch_requests(request) {
            Err(message) => plan::batch_refused(message),
            Ok(requests) => {
                let outcomes = service.plan_batch(&requests);
                plan::batch_response(&outcomes, &requests, service)
            }
        },
    )
}

/// Answers a `~/plan_sequence` request; the joined trajectory is published on
/// `~/trajectory` with the roadmap view and becomes the plan `~/execute` sends.
fn serve_sequence(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    request: &PlanSequence::Request,
) -> PlanSequence::Response {
    let failure = PlanPath::Response::FAILURE as i32;
    let response = with_service(
        shared,
        logger,
        |reason| sequence::sequence_refused(failure, format!("no robot loaded: {reason}")),
        |service| {
            let items = sequence::sequence_requests(request);
            let outcome = service.plan_sequence(&items);
            sequence::sequence_response(&outcome, &items, service)
        },
    );
    if response.success {
        publish_plan(shared, logger, outputs, &response.trajectory, None);
    }
    response
}

/// Answers a `~/plan_cartesian` request; a whole path (fraction 1) is published on
/// `~/trajectory` with the roadmap view, as `~/plan` publishes its plans.
fn serve_cartesian(
    shared: &Shared,
    logger: &str,
    outputs: &PlanOutputs,
    request: &PlanCartesian::Request,
) -> PlanCartesian::Response {
    let response = with_service(shared, logger, cartesian::cartesian_no_robot, |service| {
        let outcome = service.plan_cartesian(cartesian::cartesian_request(request));
        cartesian::cartesian_response(&outcome, service)
    });
    if response.success && response.fraction >= 1.0 {
        publish_plan(shared, logger, outputs, &response.trajectory, None);
    }
    response
}

/// The `~/scene` message of the current obstacles (empty when no robot is loaded).
fn scene_message(shared: &Shared) -> MarkerArray {
    let params = lock(&shared.params).clone();
    match &*lock(&shared.service) {
        Ok(service) => {
            let mut msg = markers::scene_array(&service.scene_markers(), &params.planning_frame);
            msg.markers
                .extend(service.attached_markers().iter().map(markers::attached_msg));
            msg
        }
        Err(_) => markers::scene_array(&[], &params.planning_frame),
    }
}

/// Logs the MoveIt config package's files (used and not read) and what its
/// `ompl_planning.yaml` gives, where `moveit_config` names one.
fn log_moveit_config(params: &NodeParams, service: &PlanningService, logger: &str) {
    if let Ok(Some(c)) = params.moveit_config() {
        r2r::log_info!(logger, "{}", c.summary());
        let ompl = &service.robot().ompl;
        if !ompl.is_empty() {
            let used = if params.ompl_planning {
                "used"
            } else {
                "not used (ompl_planning false)"
            };
            r2r::log_info!(logger, "OMPL planning {}; {used}", ompl.summary());
        }
        if let Some(k) = &service.robot().kinematics {
            r2r::log_info!(logger, "{}", k.summary());
        }
    }
}

/// Logs the attached objects of the scene that could not be attached to the robot.
fn log_attach_errors(service: &PlanningService, logger: &str) {
    for e in service.attach_errors() {
        r2r::log_error!(logger, "{e}; left out");
    }
}

/// Builds the CUDA side of the service's backend on a thread of its own
/// ([`PlanningService::gpu_warm_up`]), logging when it is ready, so that the first request
/// that needs the GPU does not wait for the kernels (tens of seconds on a fresh machine).
fn warm_up_gpu(service: &PlanningService, logger: &str) {
    let job = match service.gpu_warm_up() {
        Ok(Some(job)) => job,
        Ok(None) => return,
        Err(e) => {
            r2r::log_warn!(logger, "GPU warm-up: {e}");
            return;
        }
    };
    let name = logger.to_string();
    let spawned = std::thread::Builder::new()
        .name("gpu-warm-up".into())
        .spawn(move || match job.run() {
            Ok(Some(t)) => r2r::log_info!(
                &name,
                "GPU warm-up: CUDA kernels for the robot ready in {:.2} s",
                t.as_secs_f64()
            ),
            Ok(None) => {}
            Err(e) => r2r::log_warn!(&name, "GPU warm-up: {e}"),
        });
    if let Err(e) = spawned {
        r2r::log_warn!(logger, "GPU warm-up: could not start its thread: {e}");
    }
}

/// Locks a mutex, recovering the data if a task panicked while holding it (the data
/// here stays valid across a panic: every write is a single assignment).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the node until SIGINT/SIGTERM. Creates its own tokio runtime; ROS arguments
/// (`--ros-args ...`) are read from the process command line by rcl.
pub fn run() -> Result<(), NodeError> {
    on_runtime(run_async())
}

/// Runs a node's future to its end on a tokio runtime of two worker threads.
pub(crate) fn on_runtime(
    node: impl std::future::Future<Output = Result<(), NodeError>>,
) -> Result<(), NodeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(node)
}

async fn run_async() -> Result<(), NodeError> {
    let ctx = r2r::Context::create()?;
    let mut node = r2r::Node::create(ctx, NODE_NAME, "")?;
    let logger = node.logger().to_owned();

    // Parameters: adopt overrides from the command line / params file, declare the rest.
    let mut typed = NodeParams::default();
    {
        let mut map = lock(&node.params);
        for refused in typed.declare(&mut map) {
            r2r::log_warn!(&logger, "{refused}; using the default");
        }
    }
    r2r::log_info!(&logger, "parameters: {typed:?}");
    let transforms: SharedTf = Default::default();
    let service = make_service(&typed, typed.load_robot(), None, &transforms);
    match &service {
        Ok(s) => {
            r2r::log_info!(
                &logger,
                "robot '{}' loaded, {} obstacles, {} attached objects",
                s.robot().tree.name,
                s.scene().len(),
                s.attached_objects().len()
            );
            log_moveit_config(&typed, s, &logger);
            log_attach_errors(s, &logger);
            warm_up_gpu(s, &logger);
        }
        Err(e) => r2r::log_error!(
            &logger,
            "{e}; ~/plan will refuse requests until a robot parameter is fixed"
        ),
    }
    let grid_backend = typed.backend.clone();
    let shared = Arc::new(Shared {
        params: Mutex::new(typed),
        joint_state: Mutex::new(None),
        service: Mutex::new(service),
        agents: Mutex::new(AgentsService::new(AgentsSettings {
            backend: grid_backend,
            ..AgentsSettings::default()
        })),
        last_plan: Mutex::new(None),
        description_from_topic: AtomicBool::new(false),
        transforms,
        execution: Default::default(),
    });
    let (param_server, param_events) = node.make_parameter_handler()?;

    let joint_states = node.subscribe::<JointState>("joint_states", QosProfile::sensor_data())?;
    // robot_state_publisher latches the URDF here (transient local).
    let descriptions = node.subscribe::<r2r::std_msgs::msg::String>(
        "robot_description",
        QosProfile::default().reliable().transient_local(),
    )?;
    let plan_requests =
        node.create_service::<PlanPath::Service>("~/plan", QosProfile::services_default())?;
    let batch_requests =
        node.create_service::<PlanBatch::Service>("~/plan_batch", QosProfile::services_default())?;
    let sequence_requests = node.create_service::<PlanSequence::Service>(
        "~/plan_sequence",
        QosProfile::services_default(),
    )?;
    let cartesian_requests = node.create_service::<PlanCartesian::Service>(
        "~/plan_cartesian",
        QosProfile::services_default(),
    )?;
    let attach_requests = node.create_service::<AttachObject::Service>(
        "~/attach_object",
        QosProfile::services_default(),
    )?;
    let detach_requests = node.create_service::<DetachObject::Service>(
        "~/detach_object",
        QosProfile::services_default(),
    )?;
    let load_scene_requests =
        node.create_service::<LoadScene::Service>("~/load_scene", QosProfile::services_default())?;
    let save_scene_requests =
        node.create_service::<SaveScene::Service>("~/save_scene", QosProfile::services_default())?;
    let allow_requests = node.create_service::<AllowCollisions::Service>(
        "~/allow_collisions",
        QosProfile::services_default(),
    )?;
    let marker_requests = node.create_service::<GetInteractiveMarkers::Service>(
        "~/goal_marker/get_interactive_markers",
        QosProfile::services_default(),
    )?;
    let marker_feedback = node.subscribe::<InteractiveMarkerFeedback>(
        "~/goal_marker/feedback",
        QosProfile::default().keep_last(100),
    )?;
    let marker_updates = node.create_publisher::<InteractiveMarkerUpdate>(
        "~/goal_marker/update",
        QosProfile::default().keep_last(100),
    )?;
    let check_requests = node
        .create_service::<CheckState::Service>("~/check_state", QosProfile::services_default())?;
    let check_trajectory_requests = node.create_service::<CheckTrajectory::Service>(
        "~/check_trajectory",
        QosProfile::services_default(),
    )?;
    let ik_requests =
        node.create_service::<ComputeIk::Service>("~/compute_ik", QosProfile::services_default())?;
    let fk_requests =
        node.create_service::<ComputeFk::Service>("~/compute_fk", QosProfile::services_default())?;
    let clear_requests =
        node.create_service::<Trigger::Service>("~/clear_roadmap", QosProfile::services_default())?;
    let rebuild_requests = node
        .create_service::<Trigger::Service>("~/rebuild_roadmap", QosProfile::services_default())?;
    let execute_requests =
        node.create_service::<Trigger::Service>("~/execute", QosProfile::services_default())?;
    let execute_trajectory_requests = node.create_service::<ExecuteTrajectory::Service>(
        "~/execute_trajectory",
        QosProfile::services_default(),
    )?;
    let stop_requests =
        node.create_service::<Trigger::Service>("~/stop", QosProfile::services_default())?;
    let move_goals = node.create_action_server::<move_goal::MoveAction>("~/move")?;
    // One lock, released before the clients are made.
    let params = lock(&shared.params).clone();
    let controller = execute::Controller::new(&mut node, &params, &logger)?;
    drop(params);
    if let Ok(service) = lock(&shared.service).as_ref() {
        for unknown in controller.unknown_joints(service.robot()) {
            r2r::log_warn!(&logger, "controllers_file: {unknown}");
        }
    }
    // tf2's listener QoS: /tf keeps 100 messages; /tf_static is latched (transient local).
    let tf_messages = node.subscribe::<TFMessage>("/tf", QosProfile::default().keep_last(100))?;
    let tf_static_messages = node.subscribe::<TFMessage>(
        "/tf_static",
        QosProfile::default()
            .keep_last(100)
            .reliable()
            .transient_local(),
    )?;
    let obstacles = node.subscribe::<MarkerArray>("~/obstacles", QosProfile::default())?;
    let clouds = node.subscribe::<PointCloud2>("~/points", QosProfile::sensor_data())?;
    let goals = node.subscribe::<JointState>("~/goal", QosProfile::default())?;
    let goal_poses = node.subscribe::<PoseStamped>("~/goal_pose", QosProfile::default())?;
    // Maps are usually latched (transient local); this QoS also receives volatile ones.
    let grids = node.subscribe::<OccupancyGrid>(
        "~/occupancy_grid",
        QosProfile::default().reliable().transient_local(),
    )?;
    let agent_requests = node
        .create_service::<PlanAgents::Service>("~/plan_agents", QosProfile::services_default())?;
    let agent_paths_pub = node.create_publisher::<MarkerArray>(
        "~/agent_paths",
        QosProfile::default().reliable().transient_local(),
    )?;
    let trajectory_pub =
        node.create_publisher::<JointTrajectory>("~/trajectory", QosProfile::default())?;
    let scene_pub = node.create_publisher::<MarkerArray>(
        "~/scene",
        QosProfile::default().reliable().transient_local(),
    )?;
    publish(&scene_pub, &scene_message(&shared), &logger, "~/scene");
    let roadmap_pub = node.create_publisher::<MarkerArray>(
        "~/roadmap",
        QosProfile::default().reliable().transient_local(),
    )?;
    publish(
        &roadmap_pub,
        &roadmap_message(&shared, &logger),
        &logger,
        "~/roadmap",
    );
    let param_map = node.params.clone();
    let node_params = node.params.clone();

    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            while !stop.load(Ordering::Relaxed) {
                node.spin_once(SPIN_PERIOD);
            }
            // `node` drops here: its streams end and the tasks below return.
        })
    };

    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(param_server));

    // Parameter changes from `ros2 param set`: validate; refuse by restoring the old value.
    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let (scene_pub, roadmap_pub) = (scene_pub.clone(), roadmap_pub.clone());
        let mut events = param_events;
        async move {
            while let Some((name, value)) = events.next().await {
                let mut typed = lock(&shared.params);
                if !NodeParams::NAMES.contains(&name.as_str()) {
                    r2r::log_info!(
                        &logger,
                        "parameter '{name}' set to {value:?} (not used by the node)"
                    );
                    continue;
                }
                let old_scene_path = typed.scene_path.clone();
                match typed.set_at_run_time(&name, &value) {
                    Ok(()) => {
                        if name == "robot_description" {
                            shared
                                .description_from_topic
                                .store(false, Ordering::Relaxed);
                        }
                        r2r::log_info!(&logger, "parameter '{name}' set to {value:?}");
                        let params = typed.clone();
                        drop(typed);
                        if name == "scene_path" && !params.scene_path.is_empty() {
                            let outputs = (&scene_pub, &roadmap_pub);
                            if !load_scene_path(&shared, &logger, outputs, &params.scene_path) {
                                // Refused: the old value back, as for an invalid value.
                                let mut typed = lock(&shared.params);
                                typed.scene_path = old_scene_path;
                                if let Some(p) = lock(&param_map).get_mut(&name) {
                                    p.value = typed.value(&name);
                                }
                            }
                            continue;
                        }
                        tokio::task::block_in_place(|| {
                            // A new robot is loaded before the service is taken.
                            let loaded = NodeParams::ROBOT
                                .contains(&name.as_str())
                                .then(|| params.load_robot());
                            let mut service = lock(&shared.service);
                            if let Some(loaded) = loaded {
                                match make_service(
                                    &params,
                                    loaded,
                                    service.as_ref().ok(),
                                    &shared.transforms,
                                ) {
                                    Ok(s) => {
                                        r2r::log_info!(
                                            &logger,
                                            "robot '{}' loaded",
                                            s.robot().tree.name
                                        );
                                        log_moveit_config(&params, &s, &logger);
                                        log_attach_errors(&s, &logger);
                                        warm_up_gpu(&s, &logger);
                                        *service = Ok(s);
                                    }
                                    Err(e) => r2r::log_error!(
                                        &logger,
                                        "{e}; keeping the robot loaded before"
                                    ),
                                }
                            } else if let Ok(s) = service.as_mut() {
                                s.set_settings(params.service_settings());
                            }
                            let mut agents = lock(&shared.agents);
                            let mut settings = agents.settings().clone();
                            settings.backend = params.backend.clone();
                            agents.set_settings(settings);
                        });
                    }
                    Err(e) => {
                        r2r::log_warn!(&logger, "{e}; keeping {:?}", typed.value(&name));
                        if let Some(p) = lock(&param_map).get_mut(&name) {
                            p.value = typed.value(&name);
                        }
                    }
                }
            }
        }
    }));

    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let mut joint_states = joint_states;
        async move {
            let mut first = true;
            // Each kind of bad message is logged once, not at the publisher's rate.
            let mut warned = std::collections::BTreeSet::new();
            while let Some(msg) = joint_states.next().await {
                if first {
                    r2r::log_info!(
                        &logger,
                        "first joint_states message: {} joints",
                        msg.name.len()
                    );
                    first = false;
                }
                let merged = {
                    let mut kept = lock(&shared.joint_state);
                    state::merge_joint_state(kept.get_or_insert_with(Default::default), &msg)
                };
                if let Err(why) = merged {
                    if warned.insert(why.clone()) {
                        r2r::log_warn!(&logger, "joint_states: {why} (logged once)");
                    }
                }
            }
        }
    }));

    let outputs = PlanOutputs {
        trajectory: trajectory_pub,
        roadmap: roadmap_pub.clone(),
    };
    tasks.push(tokio::spawn(serve_each(
        plan_requests,
        "~/plan",
        logger.clone(),
        {
            let (shared, logger, outputs) = (shared.clone(), logger.clone(), outputs.clone());
            move |req: &PlanPath::Request| serve_plan(&shared, &logger, &outputs, req)
        },
    )));
    tasks.push(tokio::spawn(serve_each(
        batch_requests,
        "~/plan_batch",
        logger.clone(),
        {
            let (shared, logger) = (shared.clone(), logger.clone());
            move |req: &PlanBatch::Request| serve_batch(&shared, &logger, req)
        },
    )));
    tasks.push(tokio::spawn(serve_each(
        sequence_requests,
        "~/plan_sequence",
        logger.clone(),
        {
            let (shared, logger, outputs) = (shared.clone(), logger.clone(), outputs.clone());
            move |req: &PlanSequence::Request| serve_sequence(&shared, &logger, &outputs, req)
        },
    )));
    tasks.push(tokio::spawn(serve_each(
        cartesian_requests,
        "~/plan_cartesian",
        logger.clone(),
        {
            let (shared, logger, outputs) = (shared.clone(), logger.clone(), outputs.clone());
            move |req: &PlanCartesian::Request| serve_cartesian(&shared, &logger, &outputs, req)
        },
    )));
    tasks.push(tokio::spawn(serve_on_service(
        check_requests,
        "~/check_state",
        (shared.clone(), logger.clone()),
        state::check_state,
        |_| {},
    )));
    tasks.push(tokio::spawn(serve_on_service(
        check_trajectory_requests,
        "~/check_trajectory",
        (shared.clone(), logger.clone()),
        state::check_trajectory,
        |_| {},
    )));

    tasks.push(tokio::spawn(serve_on_service(
        ik_requests,
        "~/compute_ik",
        (shared.clone(), logger.clone()),
        kinematics::compute_ik,
        |_| {},
    )));
    tasks.push(tokio::spawn(serve_on_service(
        fk_requests,
        "~/compute_fk",
        (shared.clone(), logger.clone()),
        |service: &mut PlanningService, req: &ComputeFk::Request| {
            kinematics::compute_fk(service, req)
        },
        |_| {},
    )));

    // Goals (joint states on ~/goal, poses of the group's tip link on ~/goal_pose): plan from
    // the current joint state with the node's settings and publish.
    tasks.push(tokio::spawn({
        let (shared, logger, outputs) = (shared.clone(), logger.clone(), outputs.clone());
        let joint_goals = goals.map(|goal| {
            let request = PlanPath::Request {
                goal_state: goal,
                seed: -1,
                ..Default::default()
            };
            ("~/goal", request)
        });
        let pose_goals = goal_poses.map(|pose| {
            let request = PlanPath::Request {
                goal_pose: pose,
                seed: -1,
                ..Default::default()
            };
            ("~/goal_pose", request)
        });
        let mut requests = futures::stream::select(joint_goals, pose_goals);
        async move {
            while let Some((topic, request)) = requests.next().await {
                plan_topic_goal(&shared, &logger, &outputs, topic, &request);
            }
        }
    }));

    // Occupancy grids for ~/plan_agents: a bad one is logged and the previous one kept.
    tasks.push(tokio::spawn({
        let (shared, logger) = (shared.clone(), logger.clone());
        let mut grids = grids;
        async move {
            while let Some(msg) = grids.next().await {
                let (w, h) = (msg.info.width, msg.info.height);
                let result = lock(&shared.agents).set_grid(agents::grid_data(&msg));
                match result {
                    Ok(()) => r2r::log_info!(&logger, "~/occupancy_grid: {w}x{h} map received"),
                    Err(e) => {
                        r2r::log_warn!(&logger, "~/occupancy_grid: {e}; keeping the previous map")
                    }
                }
            }
        }
    }));

    tasks.push(tokio::spawn(serve_each(
        agent_requests,
        "~/plan_agents",
        logger.clone(),
        {
            let (shared, logger) = (shared.clone(), logger.clone());
            move |req: &PlanAgents::Request| {
                let outcome =
                    tokio::task::block_in_place(|| lock(&shared.agents).plan(agents::request(req)));
                let response = agents::response(&outcome);
                if let Ok(answer) = &outcome {
                    publish(
                        &agent_paths_pub,
                        &agents::paths_array(answer),
                        &logger,
                        "~/agent_paths",
                    );
                }
                response
            }
        },
    )));

    // Obstacles: every marker of an array is applied on its own; a bad one is logged and
    // skipped; a mesh marker that was to be split into convex parts and is its hull instead is
    // logged once. The scene is republished after each array that changed something.
    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let roadmap_pub = roadmap_pub.clone();
        let scene_pub = scene_pub.clone();
        let mut obstacles = obstacles;
        // Notes of meshes not split are logged once each (markers are often republished), and
        // mesh files are read once while unchanged.
        let mut noted = std::collections::HashSet::new();
        let mut mesh_files = markers::MeshFiles::default();
        // Meshes are split here, before the service is taken (a large mesh takes about a
        // second), so that the services are held up only while the scene changes.
        let mut splitter = crate::service::MeshSplitter::default();
        async move {
            while let Some(array) = obstacles.next().await {
                let how = match lock(&shared.service).as_ref() {
                    Ok(service) => service.settings().mesh_parts,
                    Err(reason) => {
                        r2r::log_warn!(&logger, "~/obstacles ignored: no robot loaded: {reason}");
                        continue;
                    }
                };
                let prepared: Vec<_> = tokio::task::block_in_place(|| {
                    let mut prepared = Vec::with_capacity(array.markers.len());
                    for m in &array.markers {
                        match markers::marker_update(m, &mut mesh_files) {
                            Ok(u) => prepared.push(splitter.prepare(u, &how)),
                            Err(e) => r2r::log_warn!(&logger, "~/obstacles: {e}"),
                        }
                    }
                    prepared
                });
                let changed = tokio::task::block_in_place(|| {
                    let mut guard = lock(&shared.service);
                    let service = match guard.as_mut() {
                        Ok(s) => s,
                        Err(reason) => {
                            r2r::log_warn!(
                                &logger,
                                "~/obstacles ignored: no robot loaded: {reason}"
                            );
                            return (0, false);
                        }
                    };
                    let mut changed = 0;
                    for p in prepared {
                        match service.apply_prepared(p) {
                            Ok(note) => {
                                changed += 1;
                                if let Some(note) = note.filter(|n| noted.insert(n.clone())) {
                                    r2r::log_warn!(&logger, "~/obstacles: {note}");
                                }
                            }
                            Err(e) => r2r::log_warn!(&logger, "~/obstacles: {e}"),
                        }
                    }
                    (changed, relabel_roadmap(service, &logger, "~/obstacles"))
                });
                let (changed, relabelled) = changed;
                let outputs = (&scene_pub, &roadmap_pub);
                republish(&shared, &logger, outputs, changed > 0, relabelled);
            }
        }
    }));

    // URDFs on the robot_description topic: loaded as if set in the robot_description
    // parameter while no parameter names a robot (NodeParams::takes_topic_description).
    tasks.push(tokio::spawn({
        let (shared, logger) = (shared.clone(), logger.clone());
        let param_map = node_params.clone();
        let mut descriptions = descriptions;
        async move {
            while let Some(msg) = descriptions.next().await {
                let from_topic = shared.description_from_topic.load(Ordering::Relaxed);
                let mut params = lock(&shared.params).clone();
                if !params.takes_topic_description(&msg.data, from_topic) {
                    r2r::log_info!(
                        &logger,
                        "robot_description topic: a URDF of {} bytes not used (the robot_description, urdf_path or moveit_config parameter names the robot, or it is loaded already)",
                        msg.data.len()
                    );
                    continue;
                }
                params.robot_description = msg.data;
                tokio::task::block_in_place(|| {
                    let loaded = params.load_robot();
                    let mut service = lock(&shared.service);
                    match make_service(&params, loaded, service.as_ref().ok(), &shared.transforms) {
                        Ok(s) => {
                            r2r::log_info!(
                                &logger,
                                "robot '{}' loaded from the robot_description topic",
                                s.robot().tree.name
                            );
                            log_attach_errors(&s, &logger);
                            warm_up_gpu(&s, &logger);
                            *service = Ok(s);
                            if let Some(p) = lock(&param_map).get_mut("robot_description") {
                                p.value = params.value("robot_description");
                            }
                            // Only this field: other parameters may have changed meanwhile.
                            lock(&shared.params).robot_description = params.robot_description;
                            shared.description_from_topic.store(true, Ordering::Relaxed);
                        }
                        Err(e) => r2r::log_error!(
                            &logger,
                            "robot_description topic: {e}; keeping the robot loaded before"
                        ),
                    }
                });
            }
        }
    }));

    // Point clouds: the latest one (older ones still queued are skipped) replaces the boxes
    // of the one before, the robot cut out where the current joint state puts it. A bad one
    // is logged and the scene kept.
    tasks.push(tokio::spawn({
        let (shared, logger) = (shared.clone(), logger.clone());
        let (scene_pub, roadmap_pub) = (scene_pub.clone(), roadmap_pub.clone());
        let mut clouds = clouds;
        async move {
            let mut first = true;
            while let Some(mut msg) = clouds.next().await {
                let mut skipped = 0;
                while let Some(Some(newer)) = clouds.next().now_or_never() {
                    msg = newer;
                    skipped += 1;
                }
                let started = std::time::Instant::now();
                let outcome = cloud::cloud_points(&msg).and_then(|points| {
                    with_service(
                        &shared,
                        &logger,
                        |reason| Err(format!("no robot loaded: {reason}")),
                        |service| {
                            let stats = service
                                .set_point_cloud_at(
                                    &msg.header.frame_id,
                                    tf::stamp_ns(&msg.header.stamp),
                                    &points,
                                )
                                .map_err(|e| e.to_string())?;
                            Ok((stats, relabel_roadmap(service, &logger, "~/points")))
                        },
                    )
                });
                match outcome {
                    Ok((stats, relabelled)) => {
                        let line = format!(
                            "~/points: {} points in '{}' -> {} boxes ({} voxels of {} m; dropped {} not finite, {} out of range, {} on the robot; {} older clouds skipped) in {:.1} ms",
                            stats.points,
                            msg.header.frame_id,
                            stats.boxes,
                            stats.voxels,
                            stats.resolution,
                            stats.non_finite,
                            stats.out_of_range,
                            stats.on_robot,
                            skipped,
                            started.elapsed().as_secs_f64() * 1e3
                        );
                        if first {
                            r2r::log_info!(&logger, "{line}");
                            first = false;
                        } else {
                            r2r::log_debug!(&logger, "{line}");
                        }
                        let outputs = (&scene_pub, &roadmap_pub);
                        republish(&shared, &logger, outputs, true, relabelled);
                    }
                    Err(e) => r2r::log_warn!(&logger, "~/points: {e}; keeping the scene"),
                }
            }
        }
    }));

    // Attached objects: the scene (obstacles and carried objects) is republished after
    // every change, and the roadmap view (the persistent roadmap is dropped with the robot
    // it was built for).
    let republish_all = {
        let (shared, logger) = (shared.clone(), logger.clone());
        let (scene_pub, roadmap_pub) = (scene_pub.clone(), roadmap_pub.clone());
        move || republish(&shared, &logger, (&scene_pub, &roadmap_pub), true, true)
    };
    tasks.push(tokio::spawn(serve_on_service(
        attach_requests,
        "~/attach_object",
        (shared.clone(), logger.clone()),
        attach::attach,
        {
            let republish_all = republish_all.clone();
            move |r: &AttachObject::Response| {
                if r.success {
                    republish_all();
                }
            }
        },
    )));
    tasks.push(tokio::spawn(serve_on_service(
        detach_requests,
        "~/detach_object",
        (shared.clone(), logger.clone()),
        attach::detach,
        move |r: &DetachObject::Response| {
            if r.success {
                republish_all();
            }
        },
    )));

    // The goal marker: kept on the tip link until a display moves it; let go (or "Plan to
    // here"), the tip link is planned there as a ~/goal_pose message would be; "Execute the
    // last plan" is ~/execute.
    let goal_marker = {
        let frame = lock(&shared.params).planning_frame.clone();
        let mut home = r2r::geometry_msgs::msg::Pose::default();
        home.orientation.w = 1.0;
        // The groups a pose goal can move, for the "Planning group" submenu, and the
        // planning group's named states.
        let menus = with_service(&shared, &logger, |_| None, |s| marker_menus(s, None));
        let mut marker = goal_marker::GoalMarker::new(&frame, home);
        if let Some((_, (groups, current, states))) = menus {
            marker = marker.with_groups(groups, &current, states);
        }
        Arc::new(Mutex::new(marker))
    };
    tasks.push(tokio::spawn({
        let (shared, logger) = (shared.clone(), logger.clone());
        let (marker, updates) = (goal_marker.clone(), marker_updates.clone());
        let mut requests = marker_requests;
        async move {
            while let Some(req) = requests.next().await {
                if !lock(&marker).touched() {
                    marker_on_tip(&shared, &logger, &marker, &updates);
                }
                let response = lock(&marker).full();
                if let Err(e) = req.respond(response) {
                    r2r::log_error!(
                        &logger,
                        "~/goal_marker/get_interactive_markers: could not answer: {e}"
                    );
                }
            }
        }
    }));
    // A robot loaded later or reloaded (a robot parameter, the robot_description topic) brings
    // its own groups and named states: the marker takes its menus, and its tip, within half
    // a second, whether or not a display has moved it.
    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let (marker, updates, logger) =
            (goal_marker.clone(), marker_updates.clone(), logger.clone());
        let stop = stop.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            // The service (robot) whose menus the marker has: only a new one is looked at.
            let mut seen = None;
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let group = lock(&marker).group().map(str::to_string);
                let found = tokio::task::block_in_place(|| {
                    let guard = shared.service.try_lock().ok()?;
                    let s = guard.as_ref().ok()?;
                    if seen == Some(s.instance()) {
                        return None;
                    }
                    let menus =
                        marker_menus(s, group.as_deref()).or_else(|| marker_menus(s, None))?;
                    Some((s.instance(), menus))
                });
                let Some((instance, ((_, pose), (groups, current, states)))) = found else {
                    continue;
                };
                seen = Some(instance);
                let frame = lock(&shared.params).planning_frame.clone();
                let mut m = lock(&marker);
                if m.set_menus(groups, &current, states) {
                    let update = m.moved_whole(&frame, markers::pose_msg(&pose), NODE_NAME);
                    drop(m);
                    publish(&updates, &update, &logger, "~/goal_marker/update");
                }
            }
        }
    }));
    tasks.push(tokio::spawn({
        let (shared, logger, outputs) = (shared.clone(), logger.clone(), outputs.clone());
        let (marker, updates) = (goal_marker, marker_updates);
        let controller = controller.clone();
        let mut feedback = marker_feedback;
        async move {
            while let Some(fb) = feedback.next().await {
                let (request, group) = {
                    let mut m = lock(&marker);
                    let request = m.feedback(&fb);
                    (request, m.group().unwrap_or_default().to_string())
                };
                match request {
                    Some(goal_marker::Request::Plan(pose)) => {
                        let request = PlanPath::Request {
                            goal_pose: pose,
                            group_name: group,
                            seed: -1,
                            ..Default::default()
                        };
                        plan_topic_goal(&shared, &logger, &outputs, "~/goal_marker", &request);
                    }
                    Some(goal_marker::Request::Named(name)) => {
                        let request = PlanPath::Request {
                            goal_name: name,
                            group_name: group,
                            seed: -1,
                            ..Default::default()
                        };
                        plan_topic_goal(&shared, &logger, &outputs, "~/goal_marker", &request);
                    }
                    Some(goal_marker::Request::Group(name)) => {
                        let tip = with_service(
                            &shared,
                            &logger,
                            |why| Err(why.to_string()),
                            |s| {
                                let tip = s.tip_pose_of(Some(&name)).map_err(|e| e.to_string())?;
                                let states =
                                    s.named_states(Some(&name)).map_err(|e| e.to_string())?;
                                Ok((tip, states))
                            },
                        );
                        match tip {
                            Ok(((link, pose), states)) => {
                                let frame = lock(&shared.params).planning_frame.clone();
                                let update = lock(&marker).retargeted(
                                    (&name, states),
                                    &frame,
                                    markers::pose_msg(&pose),
                                    NODE_NAME,
                                );
                                publish(&updates, &update, &logger, "~/goal_marker/update");
                                r2r::log_info!(
                                    &logger,
                                    "~/goal_marker: now for group '{name}' (tip link '{link}')"
                                );
                            }
                            Err(why) => r2r::log_warn!(
                                &logger,
                                "~/goal_marker: cannot serve group '{name}': {why}"
                            ),
                        }
                    }
                    Some(goal_marker::Request::Reset) => {
                        marker_on_tip(&shared, &logger, &marker, &updates)
                    }
                    // As ~/execute, in a task of its own: the marker keeps answering.
                    Some(goal_marker::Request::Execute) => {
                        let (shared, logger) = (shared.clone(), logger.clone());
                        let with = (controller.clone(), outputs.clone());
                        tokio::spawn(async move {
                            let done =
                                execute::serve_execute(shared, logger.clone(), with, None).await;
                            if done.success() {
                                r2r::log_info!(&logger, "~/goal_marker: {}", done.message);
                            } else {
                                r2r::log_warn!(&logger, "~/goal_marker: {}", done.message);
                            }
                        });
                    }
                    None => {}
                }
            }
        }
    }));

    // Scenes: a load republishes the scene and the roadmap (relabelled, or dropped with
    // the robot when the carried objects changed).
    tasks.push(tokio::spawn(serve_each(
        load_scene_requests,
        "~/load_scene",
        logger.clone(),
        {
            let (shared, logger) = (shared.clone(), logger.clone());
            let (scene_pub, roadmap_pub) = (scene_pub.clone(), roadmap_pub.clone());
            move |req: &LoadScene::Request| {
                // The scene is read (and its meshes split) before the service is taken, so
                // that a scene with large meshes does not hold up the other services.
                let options =
                    with_service(&shared, &logger, |_| None, |s| Some(scene_io::options(s)));
                let read = options
                    .map(|o| tokio::task::block_in_place(|| scene_io::read_request(req, &o)));
                let response = with_service(&shared, &logger, LoadScene::Response::refused, |s| {
                    let response = match read {
                        Some(read) => scene_io::load_read(s, req, read),
                        None => scene_io::load(s, req),
                    };
                    if response.success {
                        relabel_roadmap(s, &logger, "~/load_scene");
                    }
                    response
                });
                if response.success {
                    republish(&shared, &logger, (&scene_pub, &roadmap_pub), true, true);
                }
                response
            }
        },
    )));
    // Allowed collisions: the roadmap is dropped with the old entries (republished empty).
    tasks.push(tokio::spawn(serve_each(
        allow_requests,
        "~/allow_collisions",
        logger.clone(),
        {
            let (shared, logger) = (shared.clone(), logger.clone());
            let (scene_pub, roadmap_pub) = (scene_pub.clone(), roadmap_pub.clone());
            move |req: &AllowCollisions::Request| {
                let response =
                    with_service(&shared, &logger, AllowCollisions::Response::refused, |s| {
                        acm::answer(s, req)
                    });
                if response.success {
                    republish(&shared, &logger, (&scene_pub, &roadmap_pub), false, true);
                }
                response
            }
        },
    )));
    tasks.push(tokio::spawn(serve_on_service(
        save_scene_requests,
        "~/save_scene",
        (shared.clone(), logger.clone()),
        scene_io::save,
        |_: &SaveScene::Response| {},
    )));

    tasks.push(tokio::spawn(roadmap_trigger(
        clear_requests,
        shared.clone(),
        roadmap_pub.clone(),
        logger.clone(),
        "~/clear_roadmap",
        |s| match s.clear_roadmap() {
            true => (true, "roadmap cleared".to_string()),
            false => (true, "no roadmap to clear".to_string()),
        },
    )));
    tasks.push(tokio::spawn(roadmap_trigger(
        rebuild_requests,
        shared.clone(),
        roadmap_pub.clone(),
        logger.clone(),
        "~/rebuild_roadmap",
        |s| match s.rebuild_roadmap() {
            Ok(summary) => (true, summary.to_string()),
            Err(e) => (false, e.to_string()),
        },
    )));

    // Executions answer when the controller does; each request runs in a task of its own so
    // that a second ~/execute (or ~/execute_trajectory) is refused at once and ~/stop is
    // served meanwhile.
    enum ExecuteRequest {
        Last(r2r::ServiceRequest<Trigger::Service>),
        Given(r2r::ServiceRequest<ExecuteTrajectory::Service>),
    }
    tasks.push(tokio::spawn({
        let (shared, logger, controller) = (shared.clone(), logger.clone(), controller.clone());
        let outputs = outputs.clone();
        let mut requests = futures::stream::select(
            execute_requests.map(ExecuteRequest::Last),
            execute_trajectory_requests.map(ExecuteRequest::Given),
        );
        async move {
            while let Some(req) = requests.next().await {
                let (shared, logger) = (shared.clone(), logger.clone());
                let with = (controller.clone(), outputs.clone());
                tokio::spawn(async move {
                    match req {
                        ExecuteRequest::Last(req) => {
                            let done =
                                execute::serve_execute(shared, logger.clone(), with, None).await;
                            respond(req, done.trigger(), "~/execute", &logger);
                        }
                        ExecuteRequest::Given(req) => {
                            // Replanned, where it comes to that, with the node's settings,
                            // for the planning group of the trajectory's joints.
                            let trajectory = req.message.trajectory.clone();
                            let group = with_service(
                                &shared,
                                &logger,
                                |_| None,
                                |service| service.group_of_joints(&trajectory.joint_names),
                            );
                            let plan = LastPlan {
                                trajectory,
                                request: Some(ServicePlanRequest {
                                    group,
                                    ..Default::default()
                                }),
                            };
                            let done =
                                execute::serve_execute(shared, logger.clone(), with, Some(plan))
                                    .await;
                            let response = ExecuteTrajectory::Response {
                                success: done.success(),
                                message: done.message,
                            };
                            respond(req, response, "~/execute_trajectory", &logger);
                        }
                    }
                });
            }
        }
    }));
    tasks.push(tokio::spawn(move_goal::serve_moves(
        shared.clone(),
        logger.clone(),
        (controller.clone(), outputs.clone()),
        move_goals,
    )));
    tasks.push(tokio::spawn({
        let (shared, logger) = (shared.clone(), logger.clone());
        let mut requests = stop_requests;
        async move {
            while let Some(req) = requests.next().await {
                let response = execute::serve_stop(shared.clone(), controller.clone()).await;
                respond(req, response, "~/stop", &logger);
            }
        }
    }));
    for (messages, is_static, topic) in [
        (tf_messages, false, "/tf"),
        (tf_static_messages, true, "/tf_static"),
    ] {
        tasks.push(tokio::spawn(listen_tf(
            messages,
            shared.transforms.clone(),
            is_static,
            topic,
            logger.clone(),
        )));
    }

    r2r::log_info!(&logger, "{NODE_NAME} ready");
    let signal = wait_for_shutdown_signal().await;
    r2r::log_info!(&logger, "{signal}: shutting down");

    stop.store(true, Ordering::Relaxed);
    if let Err(e) = spinner.await {
        r2r::log_error!(&logger, "spin task failed: {e}");
    }
    for task in tasks {
        let abort = task.abort_handle();
        match tokio::time::timeout(SHUTDOWN_GRACE, task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_cancelled() => {}
            Ok(Err(e)) => r2r::log_error!(&logger, "task failed: {e}"),
            Err(_) => abort.abort(),
        }
    }
    r2r::log_info!(&logger, "stopped");
    Ok(())
}

/// The line a node logs for a response it sends.
trait Summary {
    /// Success, the verdict or error code where there is one, and the message.
    fn summary(&self) -> String;
}

/// [`Summary`] of responses with `success` and `message`, plus the fields named.
macro_rules! summary {
    ($($t:ty $(, $field:ident)*);* $(;)?) => {$(
        impl Summary for $t {
            fn summary(&self) -> String {
                let mut line = format!("success={}", self.success);
                $(line.push_str(&format!(concat!(" ", stringify!($field), "={}"), self.$field));)*
                line.push_str(&format!(" message='{}'", self.message));
                line
            }
        }
    )*};
}

summary! {
    PlanPath::Response, error_code;
    PlanCartesian::Response, error_code;
    PlanBatch::Response;
    PlanSequence::Response, error_code;
    PlanAgents::Response;
    AttachObject::Response;
    DetachObject::Response;
    LoadScene::Response, obstacles, attached;
    SaveScene::Response;
    AllowCollisions::Response;
    CheckState::Response, valid;
    CheckTrajectory::Response, valid;
    ComputeIk::Response, error_code;
    ComputeFk::Response;
    Trigger::Response;
    ExecuteTrajectory::Response;
}

/// The answer to a request that cannot run because no robot is loaded (`reason`: why not).
trait Refused {
    /// `success` false, the reason in `message`, other fields as documented for a failure.
    fn refused(reason: &str) -> Self;
}

/// [`Refused`] of responses with `success` and `message`, plus the fields given.
macro_rules! refused {
    ($($t:ty $(, $field:ident = $value:expr)*);* $(;)?) => {$(
        impl Refused for $t {
            // Some responses have no fields beyond `success` and `message`.
            #[allow(clippy::needless_update)]
            fn refused(reason: &str) -> Self {
                Self {
                    success: false,
                    message: format!("no robot loaded: {reason}"),
                    $($field: $value,)*
                    ..Default::default()
                }
            }
        }
    )*};
}

refused! {
    AttachObject::Response;
    DetachObject::Response;
    LoadScene::Response;
    SaveScene::Response;
    AllowCollisions::Response;
    CheckState::Response;
    CheckTrajectory::Response, first_invalid_point = -1, first_invalid_segment = -1;
    ComputeIk::Response, error_code = PlanPath::Response::FAILURE as i32;
    ComputeFk::Response;
}

/// Serves `requests` with `f` on the planning service (given the latest joint state first,
/// see [`with_service`]; [`Refused`] without a robot), then `after` with the response.
async fn serve_on_service<T, S>(
    requests: S,
    name: &'static str,
    (shared, logger): (Arc<Shared>, String),
    f: fn(&mut PlanningService, &T::Request) -> T::Response,
    after: impl Fn(&T::Response),
) where
    T: r2r::WrappedServiceTypeSupport + 'static,
    T::Response: Summary + Refused,
    S: futures::Stream<Item = r2r::ServiceRequest<T>> + Unpin,
{
    let log = logger.clone();
    serve_each(requests, name, log, move |req: &T::Request| {
        let response = with_service(&shared, &logger, T::Response::refused, |s| f(s, req));
        after(&response);
        response
    })
    .await
}

/// Sends `response` to `req`, logging its [`Summary`] under `name`.
fn respond<T>(req: r2r::ServiceRequest<T>, response: T::Response, name: &str, logger: &str)
where
    T: r2r::WrappedServiceTypeSupport + 'static,
    T::Response: Summary,
{
    r2r::log_info!(logger, "{name}: {}", response.summary());
    if let Err(e) = req.respond(response) {
        r2r::log_error!(logger, "{name}: could not send the response: {e}");
    }
}

/// Adds the transforms of every message of `messages` to `transforms`; refusals are
/// logged, at most once per frame pair's message text, so a broadcaster repeating a bad
/// transform at 100 Hz does not flood the log.
async fn listen_tf<S>(
    mut messages: S,
    transforms: SharedTf,
    is_static: bool,
    topic: &'static str,
    logger: String,
) where
    S: futures::Stream<Item = TFMessage> + Unpin,
{
    let mut logged = std::collections::HashSet::new();
    let mut listener = tf::Listener::default();
    while let Some(msg) = messages.next().await {
        let added = {
            let mut buffer = transforms.write().unwrap_or_else(|p| p.into_inner());
            listener.add(&mut buffer, &msg, is_static)
        };
        if added.cleared {
            r2r::log_warn!(
                &logger,
                "{topic}: the clock jumped back; dynamic transforms dropped"
            );
        }
        for r in added.refused {
            if logged.len() < 1000 && logged.insert(r.clone()) {
                r2r::log_warn!(&logger, "{topic}: {r}; transform ignored");
            }
        }
    }
}

/// Answers every request of `requests` with `answer`, logging each response's [`Summary`]
/// under `name`.
async fn serve_each<T, S>(
    mut requests: S,
    name: &'static str,
    logger: String,
    mut answer: impl FnMut(&T::Request) -> T::Response,
) where
    T: r2r::WrappedServiceTypeSupport + 'static,
    T::Response: Summary,
    S: futures::Stream<Item = r2r::ServiceRequest<T>> + Unpin,
{
    while let Some(req) = requests.next().await {
        let response = answer(&req.message);
        respond(req, response, name, &logger);
    }
}

/// Serves a roadmap `std_srvs/Trigger` service: `op` runs on the planning service (the
/// latest joint state applied first) and returns (success, message); `~/roadmap` is
/// republished after each call.
async fn roadmap_trigger<S>(
    mut requests: S,
    shared: Arc<Shared>,
    roadmap_pub: r2r::Publisher<MarkerArray>,
    logger: String,
    name: &'static str,
    op: fn(&mut PlanningService) -> (bool, String),
) where
    S: futures::Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin,
{
    while let Some(req) = requests.next().await {
        let current = lock(&shared.joint_state).clone();
        let (success, message) =
            tokio::task::block_in_place(|| match lock(&shared.service).as_mut() {
                Ok(s) => {
                    if let Some(js) = &current {
                        if let Err(e) = s.set_joint_state(&js.name, &js.position) {
                            r2r::log_warn!(&logger, "joint_states: {e}; message ignored");
                        }
                    }
                    op(s)
                }
                Err(reason) => (false, format!("no robot loaded: {reason}")),
            });
        publish(
            &roadmap_pub,
            &roadmap_message(&shared, &logger),
            &logger,
            "~/roadmap",
        );
        r2r::log_info!(&logger, "{name}: success={success} message='{message}'");
        if let Err(e) = req.respond(Trigger::Response { success, message }) {
            r2r::log_error!(&logger, "{name}: could not send the response: {e}");
        }
    }
}

/// Waits for SIGINT (Ctrl-C, `ros2 launch` shutdown) or SIGTERM and names it. If the
/// handlers cannot be installed, waits forever rather than exiting at once.
async fn wait_for_shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let term = async {
        match term.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => futures::future::pending::<()>().await,
        }
    };
    let int = async {
        if tokio::signal::ctrl_c().await.is_err() {
            futures::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = int => "SIGINT",
        _ = term => "SIGTERM",
    }
}
