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
//! accepted it (less [`MONITOR_LAG`] for a robot behind its timing). Where that is no longer
//! valid the execution is stopped: the goal cancelled and `~/execute` answered with what
//! collides (action), or an empty trajectory sent and a warning logged (topic).
//!
//! Replanning (`replan_attempts` > 0): after such a stop and `replan_delay`, the same request
//! is planned again from where the robot holds to the configuration the stopped trajectory
//! ended at ([`crate::service::ServicePlanRequest::replan_to`]), published and sent,
//! monitored in turn, until one finishes or the attempts are spent. In topic mode `~/execute`
//! has answered already: the log says what was stopped, replanned and sent.
//!
//! `~/execute_trajectory` runs the same for a trajectory given in the request (replanned,
//! where it comes to that, with the node's planner settings).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use r2r::control_msgs::action::FollowJointTrajectory;
use r2r::std_srvs::srv::Trigger;
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::{ActionClient, ActionClientGoal, GoalStatus};

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
const SERVER_WAIT: Duration = Duration::from_secs(5);

/// The `FollowJointTrajectory` action type.
pub type Follow = FollowJointTrajectory::Action;

/// The execution in progress, if any (its goal handle, for `~/stop`).
#[derive(Default)]
pub struct Execution {
    goal: Mutex<Option<ActionClientGoal<Follow>>>,
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

/// What `~/execute` and `~/stop` send through.
#[derive(Clone)]
pub struct Controller {
    /// The command topic ([`CONTROLLER_TOPIC`]).
    pub topic: r2r::Publisher<JointTrajectory>,
    /// The action client (parameter `controller_action`, read at start).
    pub action: ActionClient<Follow>,
    /// The action's name, as given.
    pub action_name: String,
}

fn answer(success: bool, message: String) -> Trigger::Response {
    Trigger::Response { success, message }
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
) -> (bool, String) {
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
            true,
            format!("executed {what}: the controller reports {code}{detail}"),
        ),
        GoalStatus::Canceled => (
            false,
            format!("{what} was cancelled before it finished{detail}"),
        ),
        GoalStatus::Aborted | GoalStatus::Succeeded => (
            false,
            format!("{what} failed: the controller reports {code}{detail}"),
        ),
        other => (
            false,
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
        let from = point_at(&self.times, elapsed - MONITOR_LAG);
        if from + 1 >= self.times.len() {
            return None;
        }
        try_with_service(
            shared,
            logger,
            |reason| Some(format!("the robot is no longer loaded ({reason})")),
            |service| {
                let now = service.world_revision();
                if now == self.seen {
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
        match controller.topic.publish(&JointTrajectory::default()) {
            Ok(()) => r2r::log_warn!(
                &logger,
                "~/execute: stopped the trajectory sent to {CONTROLLER_TOPIC} (an empty \
                 trajectory sent): {why}"
            ),
            Err(e) => {
                r2r::log_error!(
                    &logger,
                    "~/execute: could not stop the trajectory sent to {CONTROLLER_TOPIC} ({e}): \
                     {why}"
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
                    let (_, seen) = sendable(&shared, &logger, &planned)
                        .map_err(|e| format!("(not sent): {e}"))?;
                    Ok((planned, seen, what))
                });
            let (planned, seen, what) = match checked {
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
            if let Err(e) = controller.topic.publish(&planned) {
                r2r::log_error!(&logger, "{CONTROLLER_TOPIC}: could not publish: {e}");
                return;
            }
            r2r::log_info!(
                &logger,
                "~/execute: replanned from where the robot holds (attempt {replans}) and sent \
                 to {CONTROLLER_TOPIC}: {what}"
            );
            allowed = allowed_seconds(duration_of(&planned), &params);
            monitor = Monitor::new(&planned, seen);
            break;
        }
    }
}

/// [`state::execution_verdict`] of `trajectory` now, with the world revision it was judged
/// in (for the monitor).
fn sendable(
    shared: &Shared,
    logger: &str,
    trajectory: &JointTrajectory,
) -> Result<(String, WorldRevision), String> {
    with_service(
        shared,
        logger,
        |reason| Err(format!("no robot loaded: {reason}")),
        |service| {
            state::execution_verdict(service, trajectory)
                .map(|what| (what, service.world_revision()))
        },
    )
}

/// Answers `~/execute` (`plan` None: the last planned trajectory) and
/// `~/execute_trajectory` (`plan`: the request's trajectory): when the robot is at its start
/// and it is valid in the current scene ([`state::execution_verdict`]), it goes to the
/// controller.
pub async fn serve_execute(
    shared: Arc<Shared>,
    logger: String,
    (controller, outputs): (Controller, PlanOutputs),
    plan: Option<LastPlan>,
) -> Trigger::Response {
    {
        let mut busy = lock(&shared.execution.busy);
        if *busy {
            return answer(
                false,
                "not executed: an execution is running (~/stop cancels it)".into(),
            );
        }
        *busy = true;
    }
    // Frees the slot however the execution ends (a panic included).
    struct Release<'a>(&'a Execution);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            *lock(&self.0.goal) = None;
            *lock(&self.0.busy) = false;
        }
    }
    let _release = Release(&shared.execution);
    execute(&shared, &logger, (controller, outputs), plan).await
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
    /// With the answer for `~/execute`.
    Answered(Trigger::Response),
    /// Execution monitoring stopped it; what was stopped and why (the cancellation
    /// included), which replanning may follow.
    Stopped(String),
}

/// Sends the last plan; where execution monitoring stops it and `replan_attempts` allows,
/// plans again from where the robot holds to where it was going and sends that (MoveIt's
/// replanning), until a trajectory finishes, the attempts are spent, or `~/stop` comes.
async fn execute(
    shared: &Arc<Shared>,
    logger: &str,
    (controller, outputs): (Controller, PlanOutputs),
    plan: Option<LastPlan>,
) -> Trigger::Response {
    let Some(last) = plan.or_else(|| lock(&shared.last_plan).clone()) else {
        return answer(
            false,
            "nothing to execute: no trajectory planned yet".into(),
        );
    };
    let stops = shared.execution.stops.load(Ordering::SeqCst);
    let replan = Replan::of(&last);
    let mut trajectory = last.trajectory;
    // What happened before the run under way: monitor stops and replanning attempts.
    let mut history: Vec<String> = Vec::new();
    let mut replans = 0;
    loop {
        let ran = run(
            shared,
            logger,
            (controller.clone(), outputs.clone()),
            (&trajectory, replan.clone()),
            stops,
        )
        .await;
        *lock(&shared.execution.goal) = None;
        let stopped = match ran {
            Ran::Answered(mut response) => {
                if !history.is_empty() {
                    response.message =
                        format!("{} (after {})", response.message, history.join("; "));
                }
                return response;
            }
            Ran::Stopped(stopped) => stopped,
        };
        history.push(stopped);
        let params = lock(&shared.params).clone();
        let Some(replan) = replan.as_ref().filter(|_| params.replan_attempts > 0) else {
            let why = if params.replan_attempts > 0 {
                "; not replanned: the trajectory is a Cartesian path (~/plan_cartesian)"
            } else {
                ""
            };
            return answer(false, format!("{}{why}", history.join("; ")));
        };
        loop {
            if replans >= params.replan_attempts {
                r2r::log_warn!(
                    logger,
                    "~/execute: replanning gave up: {}",
                    history.join("; ")
                );
                return answer(
                    false,
                    format!(
                        "{}; no replanning attempt left (replan_attempts {})",
                        history.join("; "),
                        params.replan_attempts
                    ),
                );
            }
            replans += 1;
            tokio::time::sleep(Duration::from_secs_f64(params.replan_delay)).await;
            if shared.execution.stopped_since(stops) {
                return answer(
                    false,
                    format!("{}; ~/stop came before replanning", history.join("; ")),
                );
            }
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
                Err(why) => history.push(format!("replanning attempt {replans} failed {why}")),
            }
        }
    }
}

/// Sends one trajectory (checks, the topic or the action, monitoring) and waits for how it
/// ends; nothing is sent once a `~/stop` has come since `stops` was read.
async fn run(
    shared: &Arc<Shared>,
    logger: &str,
    (controller, outputs): (Controller, PlanOutputs),
    (trajectory, replan): (&JointTrajectory, Option<Replan>),
    stops: u64,
) -> Ran {
    let trajectory = trajectory.clone();
    let (what, checked_in) = match sendable(shared, logger, &trajectory) {
        Err(why) => return Ran::Answered(answer(false, format!("not executed: {why}"))),
        Ok(found) => found,
    };
    let params = lock(&shared.params).clone();
    let seconds = duration_of(&trajectory);
    let allowed = allowed_seconds(seconds, &params);
    // Whatever the mode, a new trajectory ends the monitor of one sent on the topic before.
    let send = shared.execution.topic_sends.fetch_add(1, Ordering::SeqCst) + 1;
    if params.execution_mode == "topic" {
        return Ran::Answered(match controller.topic.publish(&trajectory) {
            Ok(()) => {
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
                answer(true, format!("sent {what} to {CONTROLLER_TOPIC}"))
            }
            Err(e) => answer(false, format!("{CONTROLLER_TOPIC}: could not publish: {e}")),
        });
    }
    // ("N points, D s," reads on in "sent ... to"; here it ends a clause.)
    let what = what.trim_end_matches(',').to_string();
    let action = controller.action_name.clone();
    let no_server = || {
        format!(
            "not executed: no FollowJointTrajectory action server at {} within {} s (is the \
             controller running? execution_mode: topic publishes on {CONTROLLER_TOPIC} instead)",
            action,
            SERVER_WAIT.as_secs()
        )
    };
    let available = r2r::Node::is_available(&controller.action);
    match available {
        Ok(available) => {
            if !matches!(
                tokio::time::timeout(SERVER_WAIT, available).await,
                Ok(Ok(()))
            ) {
                return Ran::Answered(answer(false, no_server()));
            }
        }
        Err(e) => return Ran::Answered(answer(false, format!("not executed: {action}: {e}"))),
    }
    if shared.execution.stopped_since(stops) {
        return Ran::Answered(answer(
            false,
            format!("not executed: ~/stop came before {what} was sent"),
        ));
    }
    let goal = FollowJointTrajectory::Goal {
        trajectory: trajectory.clone(),
        ..Default::default()
    };
    let sent = controller.action.send_goal_request(goal);
    let sent = match sent {
        Ok(sent) => sent,
        Err(e) => return Ran::Answered(answer(false, format!("not executed: {action}: {e}"))),
    };
    let (handle, result, mut feedback) = match tokio::time::timeout(SERVER_WAIT, sent).await {
        Err(_) => return Ran::Answered(answer(false, no_server())),
        Ok(Err(r2r::Error::RCL_RET_ACTION_GOAL_REJECTED)) => {
            return Ran::Answered(answer(
                false,
                format!("not executed: the controller rejected {what}"),
            ))
        }
        Ok(Err(e)) => return Ran::Answered(answer(false, format!("not executed: {action}: {e}"))),
        Ok(Ok(accepted)) => accepted,
    };
    *lock(&shared.execution.goal) = Some(handle.clone());
    r2r::log_info!(logger, "~/execute: {action} accepted {what}");
    // Feedback is not needed; it is drained so that the client's channel never fills.
    let drain = tokio::spawn(async move { while feedback.next().await.is_some() {} });
    let mut monitor = Monitor::new(&trajectory, checked_in);
    let watch = async {
        if params.monitor_execution {
            monitor.until_invalid(shared, logger).await
        } else {
            std::future::pending().await
        }
    };
    let waited = tokio::select! {
        waited = tokio::time::timeout(Duration::from_secs_f64(allowed.max(0.0)), result) => waited,
        why = watch => {
            drain.abort();
            let cancelled = cancel(&handle).await;
            r2r::log_warn!(logger, "~/execute: stopped {what}: {why}");
            // Only a robot known to hold is planned on from (not one whose controller did
            // not confirm the cancellation).
            return if cancelled {
                Ran::Stopped(format!("stopped {what}: {why}; the goal was cancelled"))
            } else {
                Ran::Answered(answer(
                    false,
                    format!("stopped {what}: {why}; cancelling the goal was not confirmed"),
                ))
            };
        }
    };
    drain.abort();
    Ran::Answered(match waited {
        Ok(Ok((status, result))) => {
            let (success, message) = outcome(status, &result, &what);
            answer(success, message)
        }
        Ok(Err(e)) => answer(false, format!("{what}: no result from {action}: {e}")),
        Err(_) => {
            let cancelled = cancel(&handle).await;
            answer(
                false,
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
    })
}

/// Cancels a goal; whether the controller confirmed it within [`SERVER_WAIT`].
async fn cancel(handle: &ActionClientGoal<Follow>) -> bool {
    match handle.cancel() {
        Ok(done) => matches!(tokio::time::timeout(SERVER_WAIT, done).await, Ok(Ok(()))),
        Err(_) => false,
    }
}

/// Answers `~/stop`: cancels the running execution (action), or publishes an empty
/// trajectory on the controller topic (topic mode).
pub async fn serve_stop(shared: Arc<Shared>, controller: Controller) -> Trigger::Response {
    let mode = lock(&shared.params).execution_mode.clone();
    if mode == "topic" {
        shared.execution.topic_sends.fetch_add(1, Ordering::SeqCst);
        return match controller.topic.publish(&JointTrajectory::default()) {
            Ok(()) => answer(
                true,
                format!("sent an empty trajectory (stop and hold) to {CONTROLLER_TOPIC}"),
            ),
            Err(e) => answer(false, format!("{CONTROLLER_TOPIC}: could not publish: {e}")),
        };
    }
    shared.execution.stops.fetch_add(1, Ordering::SeqCst);
    let goal = lock(&shared.execution.goal).clone();
    let Some(goal) = goal else {
        if *lock(&shared.execution.busy) {
            return answer(
                true,
                "no goal was running: the execution under way (checking, or replanning) sends \
                 none from now on"
                    .into(),
            );
        }
        return answer(false, "nothing to stop: no execution is running".into());
    };
    match goal.cancel() {
        Ok(done) => match tokio::time::timeout(SERVER_WAIT, done).await {
            Ok(Ok(())) => answer(
                true,
                "the controller cancelled the running execution".into(),
            ),
            Ok(Err(e)) => answer(false, format!("the controller refused to cancel: {e}")),
            Err(_) => answer(
                false,
                format!(
                    "no answer to the cancel request within {} s",
                    SERVER_WAIT.as_secs()
                ),
            ),
        },
        Err(e) => answer(false, format!("could not cancel: {e}")),
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
        let (s, m) = outcome(GoalStatus::Succeeded, &ok, "a plan");
        assert!(s && m.contains("SUCCESSFUL"), "{m}");
        let bad = FollowJointTrajectory::Result {
            error_code: FollowJointTrajectory::Result::PATH_TOLERANCE_VIOLATED as i32,
            error_string: "wrist_1_joint off by 0.2".into(),
        };
        let (s, m) = outcome(GoalStatus::Aborted, &bad, "a plan");
        assert!(!s && m.contains("PATH_TOLERANCE_VIOLATED (-4)") && m.contains("wrist_1_joint"));
        // Succeeded with an error code is not success.
        let (s, _) = outcome(GoalStatus::Succeeded, &bad, "a plan");
        assert!(!s);
        let (s, m) = outcome(GoalStatus::Canceled, &ok, "a plan");
        assert!(!s && m.contains("cancelled"), "{m}");
        assert_eq!(error_code_name(7), "an unknown error code");
    }
}
