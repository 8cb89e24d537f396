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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use r2r::control_msgs::action::FollowJointTrajectory;
use r2r::std_srvs::srv::Trigger;
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::{ActionClient, ActionClientGoal, GoalStatus};

use super::{lock, params::NodeParams, state, with_service, Shared};

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
    trajectory.points.last().map_or(0.0, |p| {
        f64::from(p.time_from_start.sec) + f64::from(p.time_from_start.nanosec) * 1e-9
    })
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

/// Answers `~/execute`: the last planned trajectory, when the robot is at its start and it is
/// valid in the current scene ([`state::execution_verdict`]), goes to the controller.
pub async fn serve_execute(
    shared: Arc<Shared>,
    logger: String,
    controller: Controller,
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
    execute(&shared, &logger, controller).await
}

async fn execute(shared: &Shared, logger: &str, controller: Controller) -> Trigger::Response {
    let Some(trajectory) = lock(&shared.last_trajectory).clone() else {
        return answer(
            false,
            "nothing to execute: no trajectory planned yet".into(),
        );
    };
    let verdict = with_service(
        shared,
        logger,
        |reason| Err(format!("no robot loaded: {reason}")),
        |service| state::execution_verdict(service, &trajectory),
    );
    let what = match verdict {
        Err(why) => return answer(false, format!("not executed: {why}")),
        Ok(what) => what,
    };
    let params = lock(&shared.params).clone();
    if params.execution_mode == "topic" {
        return match controller.topic.publish(&trajectory) {
            Ok(()) => answer(true, format!("sent {what} to {CONTROLLER_TOPIC}")),
            Err(e) => answer(false, format!("{CONTROLLER_TOPIC}: could not publish: {e}")),
        };
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
                return answer(false, no_server());
            }
        }
        Err(e) => return answer(false, format!("not executed: {action}: {e}")),
    }
    let goal = FollowJointTrajectory::Goal {
        trajectory: trajectory.clone(),
        ..Default::default()
    };
    let sent = controller.action.send_goal_request(goal);
    let sent = match sent {
        Ok(sent) => sent,
        Err(e) => return answer(false, format!("not executed: {action}: {e}")),
    };
    let (handle, result, mut feedback) = match tokio::time::timeout(SERVER_WAIT, sent).await {
        Err(_) => return answer(false, no_server()),
        Ok(Err(r2r::Error::RCL_RET_ACTION_GOAL_REJECTED)) => {
            return answer(
                false,
                format!("not executed: the controller rejected {what}"),
            )
        }
        Ok(Err(e)) => return answer(false, format!("not executed: {action}: {e}")),
        Ok(Ok(accepted)) => accepted,
    };
    *lock(&shared.execution.goal) = Some(handle.clone());
    r2r::log_info!(logger, "~/execute: {action} accepted {what}");
    // Feedback is not needed; it is drained so that the client's channel never fills.
    let drain = tokio::spawn(async move { while feedback.next().await.is_some() {} });
    let seconds = duration_of(&trajectory);
    let allowed = allowed_seconds(seconds, &params);
    let waited = tokio::time::timeout(Duration::from_secs_f64(allowed.max(0.0)), result).await;
    drain.abort();
    match waited {
        Ok(Ok((status, result))) => {
            let (success, message) = outcome(status, &result, &what);
            answer(success, message)
        }
        Ok(Err(e)) => answer(false, format!("{what}: no result from {action}: {e}")),
        Err(_) => {
            let cancelled = match handle.cancel() {
                Ok(done) => matches!(tokio::time::timeout(SERVER_WAIT, done).await, Ok(Ok(()))),
                Err(_) => false,
            };
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
    }
}

/// Answers `~/stop`: cancels the running execution (action), or publishes an empty
/// trajectory on the controller topic (topic mode).
pub async fn serve_stop(shared: Arc<Shared>, controller: Controller) -> Trigger::Response {
    let mode = lock(&shared.params).execution_mode.clone();
    if mode == "topic" {
        return match controller.topic.publish(&JointTrajectory::default()) {
            Ok(()) => answer(
                true,
                format!("sent an empty trajectory (stop and hold) to {CONTROLLER_TOPIC}"),
            ),
            Err(e) => answer(false, format!("{CONTROLLER_TOPIC}: could not publish: {e}")),
        };
    }
    let goal = lock(&shared.execution.goal).clone();
    let Some(goal) = goal else {
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
