//! `~/execute` and `~/stop`: the last planned trajectory goes to a controller, either as a
//! `control_msgs/FollowJointTrajectory` goal (`execution_mode: action`, the default: the
//! answer comes when the controller reports the result, as MoveIt's execution does) or
//! published on the controller's command topic (`execution_mode: topic`: fire and forget).
//!
//! With the action, `~/execute` answers after the controller's result: success only for
//! `SUCCESSFUL`; an abort names the controller's error code and string. A goal that runs
//! longer than the trajectory's duration times `execution_duration_scaling` plus
//! `execution_goal_margin` is cancelled and reported (MoveIt's
//! `allowed_execution_duration_scaling` and `allowed_goal_duration_margin`). One execution
//! runs at a time; `~/stop` cancels it. In topic mode `~/stop` publishes an empty
//! trajectory, which ros2_control's joint_trajectory_controller takes as "hold the current
//! position".
//!
//! Execution monitoring (`monitor_execution`, on by default, as in MoveIt): while a
//! trajectory runs, every scene change (an obstacle, a cloud, an attached object) re-checks
//! what is left of it, from the point the robot has passed by the time since the controller
//! accepted it (less [`MONITOR_LAG`] for a robot behind its timing), or from the motion the
//! latest joint state lies nearest to where that is earlier
//! ([`crate::service::PlanningService::passed_point`]). Where that is no longer
//! valid the execution is stopped: the goal cancelled and `~/execute` answered with what
//! collides (action), or an empty trajectory sent and a warning logged (topic).
//!
//! Replanning (`replan_attempts` > 0): after such a stop and `replan_delay`, the same request
//! is planned again from where the robot holds to the configuration the stopped trajectory
//! ended at ([`crate::service::ServicePlanRequest::replan_to`]), published and sent,
//! monitored in turn, until one finishes or the attempts are spent. In topic mode `~/execute`
//! has answered already: the log says what was stopped, replanned and sent.
//!
//! Several controllers (`controllers_file`, a MoveIt `moveit_controllers.yaml`, see
//! [`crate::controllers`]): the fewest trajectory controllers covering a trajectory's joints
//! each get the part for their joints (joints they drive beyond it held where the joint
//! state has them), all at once: every action server must be there before any goal is
//! sent, the answer comes when all have finished, the first failure cancels the others, and
//! `~/stop`, monitoring and the time limit cancel them all. In topic mode each part goes to
//! its controller's `<name>/joint_trajectory`, and a stop sends an empty trajectory to every
//! one. A gripper controller (`GripperCommand`) is sent where the trajectory ends
//! ([`super::controllers`]).
//!
//! `~/execute_trajectory` runs the same for a trajectory given in the request (replanned,
//! where it comes to that, with the node's planner settings), and `~/move`
//! ([`super::move_goal`]) for the plan it has just made. Every execution ends with an
//! [`Executed`]: a MoveIt error code ([`codes`]), what happened and what was sent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use r2r::control_msgs::action::FollowJointTrajectory;
use r2r::std_srvs::srv::Trigger;
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::GoalStatus;

pub use super::controllers::Controller;
use super::controllers::{cancel_all, send_goals, GoalHandle, Part};
use super::{
    lock, params::NodeParams, plan_and_publish, state, try_with_service, with_service, LastPlan,
    PlanOutputs, Shared,
};
use crate::service::{point_at, ServicePlanRequest, TrajectoryCheckRequest, WorldRevision};

/// Where `execution_mode: topic` publishes trajectories: the command topic of a ros2_control
/// `joint_trajectory_controller` named `joint_trajectory_controller` (relative to the node's
/// namespace). For another controller remap it, e.g. `--ros-args -r
/// joint_trajectory_controller/joint_trajectory:=/arm_controller/joint_trajectory` (the launch
/// file's `controller_topic` argument does that).
pub const CONTROLLER_TOPIC: &str = "joint_trajectory_controller/joint_trajectory";

/// How long `~/execute` waits for the action server to appear and to accept a goal, and
/// `~/stop` for a cancellation to be confirmed. Discovery of a server that has just started
/// took more than 3 s in the end-to-end test.
pub const SERVER_WAIT: Duration = Duration::from_secs(5);

/// The `FollowJointTrajectory` action type.
pub type Follow = FollowJointTrajectory::Action;

/// The execution in progress, if any (its goal handles, one per controller, for `~/stop`).
#[derive(Default)]
pub struct Execution {
    goals: Mutex<Vec<GoalHandle>>,
    /// An execution holds the slot from its checks to its result (also before the goal is
    /// accepted, so that a second `~/execute` is refused at once).
    busy: Mutex<bool>,
    /// Bumped by every `~/execute` that sends a trajectory and by `~/stop` in topic mode: the
    /// monitor of an earlier topic execution ends when it changes (a newer trajectory, or a
    /// stop, replaced that one).
    topic_sends: AtomicU64,
    /// Bumped by every `~/stop`: an execution between a monitor's stop and its replanned
    /// goal sends nothing more once it changes.
    stops: AtomicU64,
}

impl Execution {
    /// Whether a `~/stop` came since `stops` was read from [`Self::stops`].
    fn stopped_since(&self, stops: u64) -> bool {
        self.stops.load(Ordering::SeqCst) != stops
    }
}

impl std::fmt::Debug for Execution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Execution")
            .field("busy", &*lock(&self.busy))
            .finish_non_exhaustive()
    }
}

fn answer(success: bool, message: String) -> Trigger::Response {
    Trigger::Response { success, message }
}

/// The error codes of an execution's outcome: those of `moveit_msgs/MoveItErrorCodes`, as
/// `~/move` answers them (`Move.action` declares the same values).
pub mod codes {
    /// Executed to the end (topic mode: sent).
    pub const SUCCESS: i32 = 1;
    /// Nothing to execute, no robot loaded, or another execution is running.
    pub const FAILURE: i32 = 99999;
    /// Not sent: the robot is not at the first point, or the trajectory is no longer valid.
    pub const INVALID_MOTION_PLAN: i32 = -2;
    /// Stopped by execution monitoring, and not replanned (or no replanning succeeded).
    pub const MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE: i32 = -3;
    /// The controller aborted or rejected the goal, or could not be reached.
    pub const CONTROL_FAILED: i32 = -4;
    /// Longer than the allowed duration, and cancelled.
    pub const TIMED_OUT: i32 = -6;
    /// Cancelled (`~/stop`, or the `~/move` goal's cancellation).
    pub const PREEMPTED: i32 = -7;
}

/// How an execution ended.
#[derive(Debug, Clone)]
pub struct Executed {
    /// [`codes::SUCCESS`] exactly when it succeeded, else one of the other [`codes`].
    pub code: i32,
    /// What happened (the answer of `~/execute`).
    pub message: String,
    /// The last trajectory sent to the controller, if any was.
    pub sent: Option<JointTrajectory>,
}

impl Executed {
    fn new(code: i32, message: String) -> Self {
        Self {
            code,
            message,
            sent: None,
        }
    }

    /// Whether it executed to the end (topic mode: was sent).
    pub fn success(&self) -> bool {
        self.code == codes::SUCCESS
    }

    /// The answer of a `std_srvs/Trigger` service.
    pub fn trigger(&self) -> Trigger::Response {
        answer(self.success(), self.message.clone())
    }
}

/// Where an execution reports its stages (`~/move` turns them into feedback): a state
/// (`EXECUTING`, `WAITING`, `PLANNING`) and what it is about.
pub type Report = tokio::sync::mpsc::UnboundedSender<(&'static str, String)>;

fn tell(report: Option<&Report>, state: &'static str, message: String) {
    if let Some(report) = report {
        // A receiver gone (the goal ended) needs nothing more.
        let _ = report.send((state, message));
    }
}

/// `FollowJointTrajectory` result error codes.
const SUCCESSFUL: i32 = FollowJointTrajectory::Result::SUCCESSFUL as i32;
const CODES: [(i32, &str); 6] = [
    (SUCCESSFUL, "SUCCESSFUL"),
    (
        FollowJointTrajectory::Result::INVALID_GOAL as i32,
        "INVALID_GOAL",
    ),
    (
        FollowJointTrajectory::Result::INVALID_JOINTS as i32,
        "INVALID_JOINTS",
    ),
    (
        FollowJointTrajectory::Result::OLD_HEADER_TIMESTAMP as i32,
        "OLD_HEADER_TIMESTAMP",
    ),
    (
        FollowJointTrajectory::Result::PATH_TOLERANCE_VIOLATED as i32,
        "PATH_TOLERANCE_VIOLATED",
    ),
    (
        FollowJointTrajectory::Result::GOAL_TOLERANCE_VIOLATED as i32,
        "GOAL_TOLERANCE_VIOLATED",
    ),
];

/// The name of a `FollowJointTrajectory` result's error code.
pub fn error_code_name(code: i32) -> &'static str {
    CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("an unknown error code", |(_, name)| name)
}

/// The seconds of a trajectory: its last point's `time_from_start`.
pub fn duration_of(trajectory: &JointTrajectory) -> f64 {
    trajectory
        .points
        .last()
        .map_or(0.0, |p| super::plan::seconds(&p.time_from_start))
}

/// How long an execution of `seconds` may take before it is cancelled.
pub fn allowed_seconds(seconds: f64, params: &NodeParams) -> f64 {
    seconds * params.execution_duration_scaling + params.execution_goal_margin
}

/// The answer for a goal's final status and result.
pub fn outcome(
    status: GoalStatus,
    result: &FollowJointTrajectory::Result,
    what: &str,
) -> (i32, String) {
    let detail = if result.error_string.is_empty() {
        String::new()
    } else {
        format!(": {}", result.error_string)
    };
    let code = format!(
        "{} ({})",
        error_code_name(result.error_code),
        result.error_code
    );
    match status {
        GoalStatus::Succeeded if result.error_code == SUCCESSFUL => (
            codes::SUCCESS,
            format!("executed {what}: the controller reports {code}{detail}"),
        ),
        GoalStatus::Canceled => (
            codes::PREEMPTED,
            format!("{what} was cancelled before it finished{detail}"),
        ),
        GoalStatus::Aborted | GoalStatus::Succeeded => (
            codes::CONTROL_FAILED,
            format!("{what} failed: the controller reports {code}{detail}"),
        ),
        other => (
            codes::CONTROL_FAILED,
            format!("{what} ended in goal status {other:?}: the controller reports {code}{detail}"),
        ),
    }
}

/// How often a running execution looks for scene changes.
const MONITOR_PERIOD: Duration = Duration::from_millis(20);

/// How far (s) a robot may lag behind its trajectory's timing for the monitor: the rest is
/// checked from the point passed this long before the time since the start.
const MONITOR_LAG: f64 = 0.1;

/// Execution monitoring: re-checks what is left of a running trajectory whenever the world
/// (scene, attached objects, robot) has changed since it was last checked.
struct Monitor {
    request: TrajectoryCheckRequest,
    /// Seconds from the start of each point.
    times: Vec<f64>,
    /// When the controller took the trajectory (accepted the goal, or it was published): a
    /// moment after it started, so the time since is never more than the robot's progress
    /// and the monitor never skips the motion under way.
    started: Instant,
    /// The world the trajectory was last found valid in.
    seen: WorldRevision,
}

impl Monitor {
    fn new(trajectory: &JointTrajectory, seen: WorldRevision) -> Self {
        Self {
            request: TrajectoryCheckRequest {
                joint_names: trajectory.joint_names.clone(),
                points: trajectory
                    .points
                    .iter()
                    .map(|p| p.positions.clone())
                    .collect(),
                resolution: None,
                // The group whose joints the trajectory has.
                group: None,
            },
            times: trajectory
                .points
                .iter()
                .map(|p| super::plan::seconds(&p.time_from_start))
                .collect(),
            started: Instant::now(),
            seen,
        }
    }

    /// Waits until the rest of the trajectory is no longer valid and says why (forever
    /// while it stays valid, or once the robot has passed its last point).
    async fn until_invalid(&mut self, shared: &Shared, logger: &str) -> String {
        let mut tick = tokio::time::interval(MONITOR_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Some(why) = self.poll(shared, logger) {
                return why;
            }
        }
    }

    /// One look: `Some(why)` when the world changed and the rest is no longer valid (or
    /// could not be checked: the robot was unloaded, the checker failed). While a plan holds
    /// the service nothing can change the world either, so a busy service is looked at again
    /// at the next tick.
    fn poll(&mut self, shared: &Shared, logger: &str) -> Option<String> {
        let elapsed = self.started.elapsed().as_secs_f64();
        let by_time = point_at(&self.times, elapsed - MONITOR_LAG);
        try_with_service(
            shared,
            logger,
            |reason| Some(format!("the robot is no longer loaded ({reason})")),
            |service| {
                let now = service.world_revision();
                if now == self.seen {
                    return None;
                }
                // A robot behind its timing (a slow controller) has not passed what the
                // time says: the rest is checked from the motion its joint state is on,
                // where that is earlier.
                let request = &self.request;
                let from = service
                    .passed_point(&request.joint_names, &request.points, by_time)
                    .map_or(by_time, |p| p.min(by_time));
                if from + 1 >= self.times.len() {
                    return None;
                }
                self.seen = now;
                match service.check_remaining(&self.request, from) {
                    Ok(None) => None,
                    Ok(Some(problem)) => Some(format!(
                        "after {elapsed:.2} s (past point {from}) the scene changed and the \
                         rest of the trajectory is no longer valid: {}",
                        problem.message
                    )),
                    Err(e) => Some(format!(
                        "after {elapsed:.2} s the scene changed and the rest of the trajectory \
                         could not be re-checked: {e}"
                    )),
                }
            },
        )
        .flatten()
    }
}

/// Topic mode: watches the trajectory just published until its allowed time has passed or
/// another `~/execute` / `~/stop` came (`send`, the value of `topic_sends` it was published
/// under); stops the robot with an empty trajectory where the rest becomes invalid. Then, as
/// `replan_attempts` allows, plans `replan` again from where the robot holds after
/// `replan_delay`, checks the plan as `~/execute` would, publishes it and watches it in turn.
async fn monitor_topic(
    shared: Arc<Shared>,
    logger: String,
    (controller, outputs): (Controller, PlanOutputs),
    (mut monitor, mut allowed): (Monitor, f64),
    send: u64,
    replan: Option<Replan>,
) {
    let current = || shared.execution.topic_sends.load(Ordering::SeqCst) == send;
    let mut replans = 0;
    loop {
        let superseded = async {
            while current() {
                tokio::time::sleep(MONITOR_PERIOD).await;
            }
        };
        let watched = tokio::time::timeout(Duration::from_secs_f64(allowed.max(0.0)), async {
            tokio::select! {
                why = monitor.until_invalid(&shared, &logger) => Some(why),
                () = superseded => None,
            }
        });
        let Ok(Some(why)) = watched.await else {
            return;
        };
        if !current() {
            return;
        }
        match controller.publish_stop() {
            Ok(to) => r2r::log_warn!(
                &logger,
                "~/execute: stopped the trajectory sent to {to} (an empty trajectory sent): \
                 {why}"
            ),
            Err(e) => {
                r2r::log_error!(
                    &logger,
                    "~/execute: could not stop the trajectory sent ({e}): {why}"
                );
                return;
            }
        }
        let Some(replan) = &replan else {
            return;
        };
        let params = lock(&shared.params).clone();
        loop {
            if replans >= params.replan_attempts {
                if params.replan_attempts > 0 {
                    r2r::log_warn!(
                        &logger,
                        "~/execute: no replanning attempt left (replan_attempts {})",
                        params.replan_attempts
                    );
                }
                return;
            }
            replans += 1;
            tokio::time::sleep(Duration::from_secs_f64(params.replan_delay)).await;
            if !current() {
                return;
            }
            let checked = replan
                .plan(&shared, &logger, &outputs)
                .and_then(|(planned, what)| {
                    let (_, seen, parts) = sendable(&shared, &logger, &controller, &planned)
                        .map_err(|(_, e)| format!("(not sent): {e}"))?;
                    Ok((planned, seen, parts, what))
                });
            let (planned, seen, parts, what) = match checked {
                Ok(found) => found,
                Err(why) => {
                    r2r::log_warn!(
                        &logger,
                        "~/execute: replanning attempt {replans} failed {why}"
                    );
                    continue;
                }
            };
            if !current() {
                return;
            }
            let to = match controller.publish(&parts) {
                Ok(to) => to,
                Err(e) => {
                    r2r::log_error!(&logger, "~/execute: {e}");
                    return;
                }
            };
            r2r::log_info!(
                &logger,
                "~/execute: replanned from where the robot holds (attempt {replans}) and sent \
                 to {to}: {what}"
            );
            allowed = allowed_seconds(duration_of(&planned), &params);
            monitor = Monitor::new(&planned, seen);
            break;
        }
    }
}

/// [`state::execution_verdict`] of `trajectory` now, with the world revision it was judged
/// in (for the monitor) and the controllers' parts of it (joints a controller drives beyond
/// the trajectory held where the same joint state has them); else an error code and why.
fn sendable(
    shared: &Shared,
    logger: &str,
    controller: &Controller,
    trajectory: &JointTrajectory,
) -> Result<(String, WorldRevision, Vec<Part>), (i32, String)> {
    let tolerance = lock(&shared.params).execution_start_tolerance;
    let state = lock(&shared.joint_state).clone();
    with_service(
        shared,
        logger,
        |reason| Err((codes::FAILURE, format!("no robot loaded: {reason}"))),
        |service| {
            let what = state::execution_verdict(service, trajectory, tolerance)
                .map_err(|why| (codes::INVALID_MOTION_PLAN, why))?;
            let parts = controller
                .parts(state.as_ref(), trajectory)
                .map_err(|why| (codes::CONTROL_FAILED, why))?;
            Ok((what, service.world_revision(), parts))
        },
    )
}

/// The execution slot, held by one execution from its checks to its result (also before a
/// goal is accepted, so that a second `~/execute` is refused at once); freed when dropped,
/// however the execution ends (a panic included).
pub struct Slot<'a>(&'a Execution);

impl Execution {
    /// The slot, or `None` while another execution holds it.
    pub fn claim(&self) -> Option<Slot<'_>> {
        let mut busy = lock(&self.busy);
        if *busy {
            return None;
        }
        *busy = true;
        Some(Slot(self))
    }

    /// The number of `~/stop`s (and `~/move` cancellations) so far: an execution that read
    /// it sends nothing once it changes.
    pub fn stops(&self) -> u64 {
        self.stops.load(Ordering::SeqCst)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        lock(&self.0.goals).clear();
        *lock(&self.0.busy) = false;
    }
}

/// Why an execution was not started: another one holds the slot.
pub const BUSY: &str = "not executed: an execution is running (~/stop cancels it)";

/// Answers `~/execute` (`plan` None: the last planned trajectory) and
/// `~/execute_trajectory` (`plan`: the request's trajectory): when the robot is at its start
/// and it is valid in the current scene ([`state::execution_verdict`]), it goes to the
/// controller.
pub async fn serve_execute(
    shared: Arc<Shared>,
    logger: String,
    with: (Controller, PlanOutputs),
    plan: Option<LastPlan>,
) -> Executed {
    let Some(_slot) = shared.execution.claim() else {
        return Executed::new(codes::FAILURE, BUSY.into());
    };
    let Some(plan) = plan.or_else(|| lock(&shared.last_plan).clone()) else {
        return Executed::new(
            codes::FAILURE,
            "nothing to execute: no trajectory planned yet".into(),
        );
    };
    let stops = shared.execution.stops();
    execute(&shared, &logger, with, plan, stops, None).await
}

/// What replanning plans: `again` (the request to the trajectory's last point from the
/// current state), published as planned by `kept` (the request of the first plan).
#[derive(Clone)]
struct Replan {
    again: ServicePlanRequest,
    kept: ServicePlanRequest,
}

impl Replan {
    /// Replanning of `plan`: `None` for a Cartesian path (no request) or an empty trajectory.
    fn of(plan: &LastPlan) -> Option<Self> {
        let kept = plan.request.clone()?;
        let goal = plan.trajectory.points.last()?;
        Some(Self {
            again: kept.replan_to(&plan.trajectory.joint_names, &goal.positions),
            kept,
        })
    }

    /// Plans again and publishes it (as `~/plan` would): the trajectory with `~/plan`'s
    /// message, or why not.
    fn plan(
        &self,
        shared: &Shared,
        logger: &str,
        outputs: &PlanOutputs,
    ) -> Result<(JointTrajectory, String), String> {
        let response = plan_and_publish(shared, logger, outputs, &self.again, Some(&self.kept));
        if response.success {
            Ok((response.trajectory, response.message))
        } else {
            Err(format!(
                "(error code {}): {}",
                response.error_code, response.message
            ))
        }
    }
}

/// How one trajectory's execution ended.
enum Ran {
    /// With the outcome.
    Answered(Executed),
    /// Execution monitoring stopped it; what was stopped and why (the cancellation
    /// included), which replanning may follow.
    Stopped(String),
}

/// Sends `plan` (the caller holds the execution slot; `stops` was read from
/// [`Execution::stops`] when the request came, and nothing is sent once it changes); where
/// execution monitoring stops it and `replan_attempts` allows, plans again from where the
/// robot holds to where it was going and sends that (MoveIt's replanning), until a
/// trajectory finishes, the attempts are spent, or `~/stop` comes. Each stage goes to
/// `report`.
pub async fn execute(
    shared: &Arc<Shared>,
    logger: &str,
    (controller, outputs): (Controller, PlanOutputs),
    plan: LastPlan,
    stops: u64,
    report: Option<&Report>,
) -> Executed {
    let replan = Replan::of(&plan);
    let mut trajectory = plan.trajectory;
    // What happened before the run under way: monitor stops and replanning attempts.
    let mut history: Vec<String> = Vec::new();
    let mut replans = 0;
    let mut sent = None;
    let ended = |code: i32, message: String, sent: Option<JointTrajectory>| Executed {
        code,
        message,
        sent,
    };
    loop {
        let ran = run(
            shared,
            logger,
            (controller.clone(), outputs.clone()),
            (&trajectory, replan.clone()),
            (stops, report),
        )
        .await;
        lock(&shared.execution.goals).clear();
        let stopped = match ran {
            Ran::Answered(mut done) => {
                if !history.is_empty() {
                    done.message = format!("{} (after {})", done.message, history.join("; "));
                }
                done.sent = done.sent.or(sent);
                return done;
            }
            Ran::Stopped(stopped) => stopped,
        };
        sent = Some(trajectory.clone());
        history.push(stopped);
        let params = lock(&shared.params).clone();
        let invalidated = codes::MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE;
        let Some(replan) = replan.as_ref().filter(|_| params.replan_attempts > 0) else {
            let why = if params.replan_attempts > 0 {
                "; not replanned: the trajectory is a Cartesian path (~/plan_cartesian)"
            } else {
                ""
            };
            return ended(invalidated, format!("{}{why}", history.join("; ")), sent);
        };
        tell(report, "WAITING", history.join("; "));
        loop {
            if replans >= params.replan_attempts {
                r2r::log_warn!(
                    logger,
                    "~/execute: replanning gave up: {}",
                    history.join("; ")
                );
                let message = format!(
                    "{}; no replanning attempt left (replan_attempts {})",
                    history.join("; "),
                    params.replan_attempts
                );
                return ended(invalidated, message, sent);
            }
            replans += 1;
            tokio::time::sleep(Duration::from_secs_f64(params.replan_delay)).await;
            if shared.execution.stopped_since(stops) {
                let message = format!("{}; ~/stop came before replanning", history.join("; "));
                return ended(codes::PREEMPTED, message, sent);
            }
            tell(
                report,
                "PLANNING",
                format!("replanning (attempt {replans})"),
            );
            match replan.plan(shared, logger, &outputs) {
                Ok((planned, what)) => {
                    r2r::log_info!(
                        logger,
                        "~/execute: replanned from where the robot holds (attempt {replans}): \
                         {what}"
                    );
                    history.push(format!("replanned (attempt {replans}): {what}"));
                    trajectory = planned;
                    break;
                }
                Err(why) => {
                    let failed = format!("replanning attempt {replans} failed {why}");
                    tell(report, "WAITING", failed.clone());
                    history.push(failed);
                }
            }
        }
    }
}

/// Topic mode with `topic_arrival_tolerance` > 0: waits until the joint state has every joint
/// of `trajectory` within `tolerance` of its last point (a revolute joint also modulo whole
/// turns), for at most `allowed` seconds, or until another `~/execute` or `~/stop` came (the
/// trajectory was published as `send`, `~/stop`s and cancellations counted `stops` before).
/// The answer's code and message (`sent` says what was sent where).
async fn arrival(
    shared: &Shared,
    trajectory: &JointTrajectory,
    (send, stops, allowed): (u64, u64, f64),
    tolerance: f64,
    sent: &str,
) -> (i32, String) {
    let started = Instant::now();
    let Some(goal) = trajectory.points.last().map(|p| p.positions.clone()) else {
        return (codes::SUCCESS, sent.to_string());
    };
    loop {
        // The joint farthest from its goal, and how far (none: no state for some joint).
        let farthest = {
            let state = lock(&shared.joint_state);
            let mut worst: Option<(usize, f64)> = Some((0, 0.0));
            for (j, name) in trajectory.joint_names.iter().enumerate() {
                let at = state.as_ref().and_then(|s| {
                    let i = s.name.iter().position(|n| n == name)?;
                    s.position.get(i).copied()
                });
                match (at, goal.get(j), worst) {
                    (Some(x), Some(g), Some((_, w))) => {
                        let d = (x - g)
                            .abs()
                            .min(crate::robot::wrapped_difference(*g, x).abs());
                        if d > w {
                            worst = Some((j, d));
                        }
                    }
                    _ => worst = None,
                }
            }
            worst
        };
        if let Some((_, d)) = farthest {
            if d <= tolerance {
                return (
                    codes::SUCCESS,
                    format!(
                        "{sent}; arrived (every joint within {tolerance} of the goal) after {:.2} s",
                        started.elapsed().as_secs_f64()
                    ),
                );
            }
        }
        if shared.execution.topic_sends.load(Ordering::SeqCst) != send
            || shared.execution.stopped_since(stops)
        {
            return (
                codes::PREEMPTED,
                format!("{sent}; stopped or replaced before it arrived"),
            );
        }
        if started.elapsed().as_secs_f64() > allowed {
            let why = match farthest {
                Some((j, d)) => format!(
                    "joint '{}' is {d:.4} from its goal",
                    trajectory.joint_names[j]
                ),
                None => "no joint state for every joint of the trajectory".to_string(),
            };
            return (
                codes::TIMED_OUT,
                format!(
                    "{sent}; not arrived within {allowed:.2} s (topic_arrival_tolerance \
                     {tolerance}): {why}"
                ),
            );
        }
        tokio::time::sleep(MONITOR_PERIOD).await;
    }
}

/// Sends one trajectory (checks, the topic or the action, monitoring) and waits for how it
/// ends; nothing is sent once a `~/stop` has come since `stops` was read.
async fn run(
    shared: &Arc<Shared>,
    logger: &str,
    (controller, outputs): (Controller, PlanOutputs),
    (trajectory, replan): (&JointTrajectory, Option<Replan>),
    (stops, report): (u64, Option<&Report>),
) -> Ran {
    let trajectory = trajectory.clone();
    let (what, checked_in, parts) = match sendable(shared, logger, &controller, &trajectory) {
        Err((code, why)) => {
            return Ran::Answered(Executed::new(code, format!("not executed: {why}")))
        }
        Ok(found) => found,
    };
    let params = lock(&shared.params).clone();
    let seconds = duration_of(&trajectory);
    let allowed = allowed_seconds(seconds, &params);
    let failed = |why: String| Ran::Answered(Executed::new(codes::CONTROL_FAILED, why));
    if shared.execution.stopped_since(stops) {
        return Ran::Answered(Executed::new(
            codes::PREEMPTED,
            format!("not executed: ~/stop came before {what} was sent"),
        ));
    }
    // Whatever the mode, a new trajectory ends the monitor of one sent on the topic before.
    let send = shared.execution.topic_sends.fetch_add(1, Ordering::SeqCst) + 1;
    if params.execution_mode == "topic" {
        let to = match controller.publish(&parts) {
            Ok(to) => to,
            Err(e) => return failed(e),
        };
        if params.monitor_execution {
            tokio::spawn(monitor_topic(
                shared.clone(),
                logger.to_string(),
                (controller.clone(), outputs),
                (Monitor::new(&trajectory, checked_in), allowed),
                send,
                replan,
            ));
        }
        let message = format!("sent {what} to {to}");
        tell(report, "EXECUTING", message.clone());
        if params.topic_arrival_tolerance > 0.0 {
            let (code, message) = arrival(
                shared,
                &trajectory,
                (send, stops, allowed),
                params.topic_arrival_tolerance,
                &message,
            )
            .await;
            return Ran::Answered(Executed {
                code,
                message,
                sent: Some(trajectory),
            });
        }
        return Ran::Answered(Executed {
            code: codes::SUCCESS,
            message,
            sent: Some(trajectory),
        });
    }
    // ("N points, D s," reads on in "sent ... to"; here it ends a clause.)
    let what = what.trim_end_matches(',').to_string();
    let clients = match controller.goal_clients(&parts, &what) {
        Ok(clients) => clients,
        Err(e) => return failed(format!("not executed: {e}")),
    };
    let stopped = || shared.execution.stopped_since(stops);
    let goals = match send_goals(clients, &what, stopped).await {
        Ok(goals) => goals,
        Err((code, why)) => return Ran::Answered(Executed::new(code, why)),
    };
    let handles: Vec<_> = goals.iter().map(|g| g.handle.clone()).collect();
    *lock(&shared.execution.goals) = handles.clone();
    // A ~/stop while the goals went out found none to cancel: they are cancelled here.
    if shared.execution.stopped_since(stops) {
        let cancelled = cancel_all(&handles).await;
        return Ran::Answered(Executed {
            code: codes::PREEMPTED,
            message: format!(
                "~/stop came while {what} was being sent; {}",
                if cancelled {
                    "the goals sent were cancelled"
                } else {
                    "cancelling the goals sent was not confirmed"
                }
            ),
            sent: Some(trajectory),
        });
    }
    let accepted: Vec<&str> = goals.iter().map(|g| g.action.as_str()).collect();
    let accepted = accepted.join(", ");
    r2r::log_info!(logger, "~/execute: {accepted} accepted {what}");
    tell(report, "EXECUTING", format!("{accepted} accepted {what}"));
    let mut monitor = Monitor::new(&trajectory, checked_in);
    let watch = async {
        if params.monitor_execution {
            monitor.until_invalid(shared, logger).await
        } else {
            std::future::pending().await
        }
    };
    // The first result that is not a success ends the wait (the other goals are cancelled);
    // otherwise the last success does.
    let several = goals.len() > 1;
    let mut drains = Vec::with_capacity(goals.len());
    let mut results = FuturesUnordered::new();
    for g in goals {
        drains.push(g.drain);
        results.push(g.ending);
    }
    let all = async {
        let mut succeeded = Vec::new();
        while let Some((code, message)) = results.next().await {
            if code != codes::SUCCESS {
                return (code, message, true);
            }
            succeeded.push(message);
        }
        (codes::SUCCESS, succeeded.join("; "), false)
    };
    let waited = tokio::select! {
        waited = tokio::time::timeout(Duration::from_secs_f64(allowed.max(0.0)), all) => waited,
        why = watch => {
            let cancelled = cancel_all(&handles).await;
            r2r::log_warn!(logger, "~/execute: stopped {what}: {why}");
            // Only a robot known to hold is planned on from (not one whose controller did
            // not confirm the cancellation).
            return if cancelled {
                Ran::Stopped(format!("stopped {what}: {why}; the goal was cancelled"))
            } else {
                Ran::Answered(Executed {
                    code: codes::MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE,
                    message: format!(
                        "stopped {what}: {why}; cancelling the goal was not confirmed"
                    ),
                    sent: Some(trajectory),
                })
            };
        }
    };
    let (code, message) = match waited {
        Ok((code, message, false)) => (code, message),
        Ok((code, message, true)) => {
            // One controller failed: the others are stopped too (MoveIt stops every
            // controller of an execution that fails).
            if several {
                let cancelled = cancel_all(&handles).await;
                let others = if cancelled {
                    "the other controllers' goals were cancelled"
                } else {
                    "cancelling the other controllers' goals was not confirmed"
                };
                (code, format!("{message}; {others}"))
            } else {
                (code, message)
            }
        }
        Err(_) => {
            let cancelled = cancel_all(&handles).await;
            (
                codes::TIMED_OUT,
                format!(
                    "{what} did not finish within {allowed:.3} s ({seconds:.3} s x \
                     execution_duration_scaling {} + execution_goal_margin {} s); {}",
                    params.execution_duration_scaling,
                    params.execution_goal_margin,
                    if cancelled {
                        "the goal was cancelled"
                    } else {
                        "cancelling the goal was not confirmed"
                    }
                ),
            )
        }
    };
    Ran::Answered(Executed {
        code,
        message,
        sent: Some(trajectory),
    })
}

/// Answers `~/stop`: cancels the running execution (action), or publishes an empty
/// trajectory on the controllers' command topics (topic mode).
pub async fn serve_stop(shared: Arc<Shared>, controller: Controller) -> Trigger::Response {
    let mode = lock(&shared.params).execution_mode.clone();
    if mode == "topic" {
        shared.execution.topic_sends.fetch_add(1, Ordering::SeqCst);
        return match controller.publish_stop() {
            Ok(to) => answer(
                true,
                format!("sent an empty trajectory (stop and hold) to {to}"),
            ),
            Err(e) => answer(false, e),
        };
    }
    stop_running(&shared.execution).await
}

/// Stops the running execution, as `~/stop` does in action mode (and a `~/move` goal's
/// cancellation in either mode): no further goal is sent, and the goals running are
/// cancelled.
pub async fn stop_running(execution: &Execution) -> Trigger::Response {
    execution.stops.fetch_add(1, Ordering::SeqCst);
    let goals = lock(&execution.goals).clone();
    if goals.is_empty() {
        if *lock(&execution.busy) {
            return answer(
                true,
                "no goal was running: the execution under way (checking, or replanning) sends \
                 none from now on"
                    .into(),
            );
        }
        return answer(false, "nothing to stop: no execution is running".into());
    }
    let cancels = goals.iter().map(GoalHandle::cancel);
    let problems: Vec<String> = futures::future::join_all(cancels)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if problems.is_empty() {
        answer(
            true,
            "the controller cancelled the running execution".into(),
        )
    } else {
        answer(false, problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::builtin_interfaces::msg::Duration as RosDuration;
    use r2r::trajectory_msgs::msg::JointTrajectoryPoint;

    #[test]
    fn durations_and_allowances() {
        let mut t = JointTrajectory::default();
        assert_eq!(duration_of(&t), 0.0);
        t.points.push(JointTrajectoryPoint {
            time_from_start: RosDuration {
                sec: 2,
                nanosec: 500_000_000,
            },
            ..Default::default()
        });
        assert_eq!(duration_of(&t), 2.5);
        let p = NodeParams::default();
        // MoveIt's defaults: 1.2 x the duration + 0.5 s.
        assert!((allowed_seconds(2.5, &p) - 3.5).abs() < 1e-12);
    }

    #[test]
    fn outcomes_name_the_controllers_verdict() {
        let ok = FollowJointTrajectory::Result::default();
        let (c, m) = outcome(GoalStatus::Succeeded, &ok, "a plan");
        assert!(c == codes::SUCCESS && m.contains("SUCCESSFUL"), "{m}");
        let bad = FollowJointTrajectory::Result {
            error_code: FollowJointTrajectory::Result::PATH_TOLERANCE_VIOLATED as i32,
            error_string: "wrist_1_joint off by 0.2".into(),
        };
        let (c, m) = outcome(GoalStatus::Aborted, &bad, "a plan");
        assert_eq!(c, codes::CONTROL_FAILED);
        assert!(m.contains("PATH_TOLERANCE_VIOLATED (-4)") && m.contains("wrist_1_joint"));
        // Succeeded with an error code is not success.
        let (c, _) = outcome(GoalStatus::Succeeded, &bad, "a plan");
        assert_eq!(c, codes::CONTROL_FAILED);
        let (c, m) = outcome(GoalStatus::Canceled, &ok, "a plan");
        assert!(c == codes::PREEMPTED && m.contains("cancelled"), "{m}");
        assert_eq!(error_code_name(7), "an unknown error code");
    }
}
