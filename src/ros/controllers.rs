//! The controllers `~/execute` sends through ([`crate::controllers`] for what goes where):
//! their ROS clients, the parts of a trajectory as messages, and the goals sent, accepted
//! and cancelled.
//!
//! A trajectory controller (`control_msgs/FollowJointTrajectory`) gets its part as a
//! trajectory goal, or on its command topic in `execution_mode: topic`. A gripper controller
//! (`control_msgs/GripperCommand`) gets one position and `max_effort`; it succeeds when the
//! gripper reports `reached_goal` (or `stalled`, with `allow_stalling`). In topic mode a
//! gripper's goal is sent and not waited for.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use r2r::control_msgs::action::{FollowJointTrajectory, GripperCommand};
use r2r::control_msgs::msg::GripperCommand as GripperCommandMsg;
use r2r::sensor_msgs::msg::JointState;
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::{ActionClient, ActionClientGoal, GoalStatus, QosProfile};

use super::execute::{codes, outcome, Follow, CONTROLLER_TOPIC, SERVER_WAIT};
use super::lock;
use super::params::NodeParams;
use super::plan::{from_message, joint_trajectory};
use crate::controllers::{ControllerKind, ControllerSet, GripperGoal, PartGoal};

/// How long a gripper goal sent in topic mode is kept for `~/stop` to cancel.
const TOPIC_GRIP_WAIT: Duration = Duration::from_secs(120);

/// The `GripperCommand` action type.
pub type Grip = GripperCommand::Action;

/// A controller's action client.
#[derive(Clone)]
enum Client {
    Follow(ActionClient<Follow>),
    Gripper(ActionClient<Grip>),
}

/// A goal a controller accepted, for cancelling it.
#[derive(Clone)]
pub enum GoalHandle {
    /// A trajectory controller's.
    Follow(ActionClientGoal<Follow>),
    /// A gripper controller's.
    Gripper(ActionClientGoal<Grip>),
}

impl GoalHandle {
    /// Asks the controller to cancel it; `Ok` once it confirmed within [`SERVER_WAIT`].
    pub async fn cancel(&self) -> Result<(), String> {
        let confirmed = match self {
            GoalHandle::Follow(goal) => match goal.cancel() {
                Ok(done) => tokio::time::timeout(SERVER_WAIT, done).await,
                Err(e) => return Err(format!("could not cancel: {e}")),
            },
            GoalHandle::Gripper(goal) => match goal.cancel() {
                Ok(done) => tokio::time::timeout(SERVER_WAIT, done).await,
                Err(e) => return Err(format!("could not cancel: {e}")),
            },
        };
        match confirmed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("the controller refused to cancel: {e}")),
            Err(_) => Err(format!(
                "no answer to the cancel request within {} s",
                SERVER_WAIT.as_secs()
            )),
        }
    }
}

/// Cancels goals, all at once; whether every controller confirmed within [`SERVER_WAIT`].
pub async fn cancel_all(handles: &[GoalHandle]) -> bool {
    futures::future::join_all(handles.iter().map(GoalHandle::cancel))
        .await
        .iter()
        .all(Result::is_ok)
}

/// What `~/execute` and `~/stop` send through: the controllers of `controllers_file`, or the
/// one at `controller_action` (with [`CONTROLLER_TOPIC`]) taking every joint.
#[derive(Clone)]
pub struct Controller {
    /// The controllers, or why `controllers_file` could not be read (then nothing is sent).
    set: Arc<Result<ControllerSet, String>>,
    /// Per controller of the set, its command topic (`None`: a gripper controller).
    topics: Vec<Option<r2r::Publisher<JointTrajectory>>>,
    /// Per controller of the set, its action client.
    actions: Vec<Client>,
    /// Gripper goals sent in topic mode that have not finished: `~/stop` cancels them.
    topic_grips: Arc<std::sync::Mutex<Vec<ActionClientGoal<Grip>>>>,
}

/// What one controller is sent, as a message.
#[derive(Clone)]
enum PartMessage {
    Trajectory(JointTrajectory),
    Gripper(GripperGoal),
}

/// One controller's part of a trajectory, as sent.
pub struct Part {
    /// Index into the controller set.
    index: usize,
    message: PartMessage,
}

impl Controller {
    /// The clients of the controllers the parameters name (read once, here): the file of
    /// `controllers_file` or of `moveit_config` ([`NodeParams::controllers_source`]), else
    /// `controller_action` and [`CONTROLLER_TOPIC`]. A file that
    /// cannot be read is logged and makes every `~/execute` fail naming it; the node runs on.
    pub fn new(
        node: &mut r2r::Node,
        params: &NodeParams,
        logger: &str,
    ) -> Result<Self, r2r::Error> {
        let source = params.controllers_source();
        let set = match &source {
            Ok(None) => Ok(ControllerSet::single(
                &params.controller_action,
                CONTROLLER_TOPIC,
            )),
            Ok(Some(path)) => {
                let from = if params.controllers_file.is_empty() {
                    "moveit_config"
                } else {
                    "controllers_file"
                };
                ControllerSet::load(std::path::Path::new(path)).map_err(|e| format!("{from} {e}"))
            }
            Err(e) => Err(e.clone()),
        };
        let mut topics = Vec::new();
        let mut actions = Vec::new();
        match &set {
            Ok(set) => {
                for spec in set.controllers() {
                    match spec.kind {
                        ControllerKind::FollowJointTrajectory => {
                            topics.push(Some(node.create_publisher::<JointTrajectory>(
                                &spec.topic,
                                QosProfile::default(),
                            )?));
                            actions.push(Client::Follow(
                                node.create_action_client::<Follow>(&spec.action)?,
                            ));
                        }
                        ControllerKind::GripperCommand => {
                            topics.push(None);
                            actions.push(Client::Gripper(
                                node.create_action_client::<Grip>(&spec.action)?,
                            ));
                        }
                    }
                }
                if let Ok(Some(path)) = &source {
                    let names: Vec<String> = set
                        .controllers()
                        .iter()
                        .map(|c| {
                            format!("{} ({}, {} joints)", c.name, c.kind.name(), c.joints.len())
                        })
                        .collect();
                    r2r::log_info!(
                        logger,
                        "controllers from {} (controller_action is not used): {}",
                        path,
                        names.join(", ")
                    );
                }
            }
            Err(e) => r2r::log_error!(logger, "{e}; ~/execute sends nothing"),
        }
        Ok(Self {
            set: Arc::new(set),
            topics,
            actions,
            topic_grips: Arc::default(),
        })
    }

    /// The joints of the controllers that `robot` does not have: one line per controller.
    pub fn unknown_joints(&self, robot: &crate::robot::RobotModel) -> Vec<String> {
        self.set().map_or_else(
            |_| Vec::new(),
            |set| set.unknown_joints(|j| robot.tree.joint(j).is_ok()),
        )
    }

    /// The controller set, or why there is none.
    fn set(&self) -> Result<&ControllerSet, String> {
        self.set.as_ref().as_ref().map_err(Clone::clone)
    }

    /// The controllers' parts of `trajectory` ([`ControllerSet::split`]), joints a
    /// controller drives beyond the trajectory held where `state` (the joint states
    /// received) has them; a joint no joint state named is never guessed.
    pub fn parts(
        &self,
        state: Option<&JointState>,
        trajectory: &JointTrajectory,
    ) -> Result<Vec<Part>, String> {
        let set = self.set()?;
        let hold = |joint: &str| {
            let state = state?;
            let i = state.name.iter().position(|n| n == joint)?;
            state.position.get(i).copied()
        };
        let parts = set.split(&from_message(trajectory), hold)?;
        Ok(parts
            .into_iter()
            .map(|p| {
                let message = match p.goal {
                    PartGoal::Trajectory(t) => {
                        let mut message = joint_trajectory(&t, &trajectory.header.frame_id);
                        message.header = trajectory.header.clone();
                        PartMessage::Trajectory(message)
                    }
                    PartGoal::Gripper(g) => PartMessage::Gripper(g),
                };
                Part {
                    index: p.controller,
                    message,
                }
            })
            .collect())
    }

    /// The command topic of controller `index`, its name, or why there is none.
    fn topic(&self, index: usize) -> Result<(&r2r::Publisher<JointTrajectory>, String), String> {
        let set = self.set()?;
        let spec = set
            .controllers()
            .get(index)
            .ok_or_else(|| format!("no controller {index}"))?;
        match self.topics.get(index) {
            Some(Some(publisher)) => Ok((publisher, spec.topic.clone())),
            _ => Err(format!("controller '{}' has no command topic", spec.name)),
        }
    }

    /// Topic mode: publishes each trajectory part on its controller's command topic, and
    /// sends each gripper part as a goal not waited for (a gripper has no command topic);
    /// where they went, or what could not be sent.
    pub fn publish(&self, parts: &[Part]) -> Result<String, String> {
        let mut to = Vec::with_capacity(parts.len());
        for part in parts {
            match &part.message {
                PartMessage::Trajectory(message) => {
                    let (publisher, topic) = self.topic(part.index)?;
                    publisher
                        .publish(message)
                        .map_err(|e| format!("{topic}: could not publish: {e}"))?;
                    to.push(topic);
                }
                PartMessage::Gripper(g) => {
                    let (Some(Client::Gripper(client)), Ok(set)) =
                        (self.actions.get(part.index), self.set())
                    else {
                        return Err(format!(
                            "controller {} has no GripperCommand action",
                            part.index
                        ));
                    };
                    let action = set.controllers()[part.index].action.clone();
                    let sent = client
                        .send_goal_request(gripper_goal(g))
                        .map_err(|e| format!("{action}: could not send: {e}"))?;
                    // The answer is not waited for (topic mode does not follow execution),
                    // but the goal is kept until it finishes, for `~/stop` to cancel.
                    let grips = self.topic_grips.clone();
                    tokio::spawn(async move {
                        let Ok(Ok((goal, result, _feedback))) =
                            tokio::time::timeout(SERVER_WAIT, sent).await
                        else {
                            return;
                        };
                        let uuid = goal.uuid;
                        lock(&grips).push(goal);
                        let _ = tokio::time::timeout(TOPIC_GRIP_WAIT, result).await;
                        lock(&grips).retain(|g| g.uuid != uuid);
                    });
                    to.push(format!("{action} (GripperCommand {:.4})", g.position));
                }
            }
        }
        Ok(to.join(", "))
    }

    /// Publishes an empty trajectory (stop and hold) on every trajectory controller's
    /// command topic; the topics, or what could not be published.
    pub fn publish_stop(&self) -> Result<String, String> {
        let set = self.set()?;
        let mut to = Vec::new();
        for index in 0..set.controllers().len() {
            if let Ok((publisher, topic)) = self.topic(index) {
                publisher
                    .publish(&JointTrajectory::default())
                    .map_err(|e| format!("{topic}: could not publish: {e}"))?;
                to.push(topic);
            }
        }
        let grips: Vec<GoalHandle> = std::mem::take(&mut *lock(&self.topic_grips))
            .into_iter()
            .map(GoalHandle::Gripper)
            .collect();
        if !grips.is_empty() {
            to.push(format!("{} gripper goal(s) cancelled", grips.len()));
            tokio::spawn(async move {
                cancel_all(&grips).await;
            });
        }
        Ok(to.join(", "))
    }

    /// The clients of `parts` with the actions' names and what each part is for messages
    /// (`what`, with the controller's name where there are several parts).
    pub fn goal_clients(&self, parts: &[Part], what: &str) -> Result<Vec<GoalClient>, String> {
        let set = self.set()?;
        let mut clients = Vec::with_capacity(parts.len());
        for part in parts {
            let spec = &set.controllers()[part.index];
            let client = self
                .actions
                .get(part.index)
                .ok_or_else(|| format!("controller '{}' has no action client", spec.name))?;
            let label = if parts.len() > 1 {
                format!("{what} ({}'s part)", spec.name)
            } else {
                what.to_string()
            };
            clients.push(GoalClient {
                client: client.clone(),
                action: spec.action.clone(),
                label,
                message: part.message.clone(),
            });
        }
        Ok(clients)
    }
}

/// A part ready to go: the client, the action's name, what it is for messages, and what it
/// sends.
pub struct GoalClient {
    client: Client,
    action: String,
    label: String,
    message: PartMessage,
}

/// How an accepted goal ends: an error code of [`codes`] and what happened.
type Ending = Pin<Box<dyn Future<Output = (i32, String)> + Send>>;

/// A goal a controller accepted.
pub struct Accepted {
    /// The action it went to.
    pub action: String,
    /// For cancelling it.
    pub handle: GoalHandle,
    /// Resolves when the controller reports the result.
    pub ending: Ending,
    /// The task draining its feedback (not needed, drained so that the client's channel
    /// never fills), ended with the execution.
    pub drain: Drain,
}

/// A task aborted when dropped.
pub struct Drain(tokio::task::JoinHandle<()>);

impl Drop for Drain {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The GripperCommand goal of a gripper part.
fn gripper_goal(g: &GripperGoal) -> GripperCommand::Goal {
    GripperCommand::Goal {
        command: GripperCommandMsg {
            position: g.position,
            max_effort: g.max_effort,
        },
    }
}

/// The answer for a gripper goal's final status and result: success when it reached the
/// position, or stalled (closed on something) where that is allowed.
pub fn gripper_outcome(
    status: GoalStatus,
    result: &GripperCommand::Result,
    what: &str,
    allow_stalling: bool,
) -> (i32, String) {
    let state = format!(
        "the gripper reports position {:.4}, effort {:.3}{}{}",
        result.position,
        result.effort,
        if result.reached_goal {
            ", goal reached"
        } else {
            ""
        },
        if result.stalled { ", stalled" } else { "" }
    );
    match status {
        GoalStatus::Canceled => (
            codes::PREEMPTED,
            format!("{what} was cancelled before it finished; {state}"),
        ),
        GoalStatus::Succeeded if result.reached_goal || (result.stalled && allow_stalling) => {
            (codes::SUCCESS, format!("executed {what}: {state}"))
        }
        GoalStatus::Succeeded | GoalStatus::Aborted if result.stalled && !allow_stalling => (
            codes::CONTROL_FAILED,
            format!("{what} failed: {state} (allow_stalling is not set)"),
        ),
        other => (
            codes::CONTROL_FAILED,
            format!("{what} failed (goal status {other:?}): {state}"),
        ),
    }
}

/// Sends each part to its controller's action once every server is there: the accepted goals
/// (their feedback drained), or an error code and why nothing runs (a missing server, a
/// refusal, or `stopped()` before sending; goals accepted before a later one was refused are
/// cancelled).
pub async fn send_goals(
    clients: Vec<GoalClient>,
    what: &str,
    stopped: impl Fn() -> bool,
) -> Result<Vec<Accepted>, (i32, String)> {
    let failed = |why: String| (codes::CONTROL_FAILED, why);
    // Every server is looked for at once.
    let waits = clients.iter().map(|c| async move {
        let available = match &c.client {
            Client::Follow(client) => r2r::Node::is_available(client),
            Client::Gripper(client) => r2r::Node::is_available(client),
        };
        let kind = match c.client {
            Client::Follow(_) => "FollowJointTrajectory",
            Client::Gripper(_) => "GripperCommand",
        };
        match available {
            Ok(available) => match tokio::time::timeout(SERVER_WAIT, available).await {
                Ok(Ok(())) => Ok(()),
                _ => Err(format!("no {kind} action server at {}", c.action)),
            },
            Err(e) => Err(format!("{} ({e})", c.action)),
        }
    });
    let missing: Vec<String> = futures::future::join_all(waits)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if !missing.is_empty() {
        return Err(failed(format!(
            "not executed: {} within {} s (is the controller running? execution_mode: topic \
             publishes on the command topic instead)",
            missing.join(", "),
            SERVER_WAIT.as_secs()
        )));
    }
    if stopped() {
        return Err((
            codes::PREEMPTED,
            format!("not executed: ~/stop came before {what} was sent"),
        ));
    }
    let several = clients.len() > 1;
    let mut accepted = Vec::with_capacity(clients.len());
    let mut refused = Vec::new();
    for c in clients {
        let GoalClient {
            client,
            action,
            label,
            message,
        } = c;
        let whose = if several {
            format!("controller at {action}")
        } else {
            "controller".to_string()
        };
        let sent = match (client, message) {
            (Client::Follow(client), PartMessage::Trajectory(trajectory)) => send_one(
                &client,
                FollowJointTrajectory::Goal {
                    trajectory,
                    ..Default::default()
                },
            )
            .await
            .map(|(handle, result, drain)| {
                let ending: Ending = Box::pin(async move {
                    match result.await {
                        Ok((status, result)) => outcome(status, &result, &label),
                        Err(e) => (
                            codes::CONTROL_FAILED,
                            format!("{label}: no result from the controller: {e}"),
                        ),
                    }
                });
                (GoalHandle::Follow(handle), ending, drain)
            }),
            (Client::Gripper(client), PartMessage::Gripper(g)) => {
                send_one(&client, gripper_goal(&g))
                    .await
                    .map(|(handle, result, drain)| {
                        let ending: Ending = Box::pin(async move {
                            match result.await {
                                Ok((status, result)) => {
                                    gripper_outcome(status, &result, &label, g.allow_stalling)
                                }
                                Err(e) => (
                                    codes::CONTROL_FAILED,
                                    format!("{label}: no result from the gripper: {e}"),
                                ),
                            }
                        });
                        (GoalHandle::Gripper(handle), ending, drain)
                    })
            }
            _ => Err(Refusal::Other(format!(
                "{action}: the part does not fit the controller's kind"
            ))),
        };
        match sent {
            Ok((handle, ending, drain)) => accepted.push(Accepted {
                action,
                handle,
                ending,
                drain,
            }),
            Err(Refusal::Rejected) => {
                refused.push(format!("not executed: the {whose} rejected its goal"))
            }
            Err(Refusal::Late) => refused.push(format!(
                "not executed: {action} did not answer the goal within {} s (should it \
                 accept the goal later, the node cancels it)",
                SERVER_WAIT.as_secs()
            )),
            Err(Refusal::Other(e)) => refused.push(format!("not executed: {action}: {e}")),
        }
    }
    if refused.is_empty() {
        return Ok(accepted);
    }
    let mut message = refused.join("; ");
    if !accepted.is_empty() {
        let handles: Vec<_> = accepted.iter().map(|g| g.handle.clone()).collect();
        message.push_str(if cancel_all(&handles).await {
            "; the goals other controllers accepted were cancelled"
        } else {
            "; cancelling the goals other controllers accepted was not confirmed"
        });
    }
    Err(failed(message))
}

/// How long a goal request that was not answered within [`SERVER_WAIT`] is still watched for
/// a late acceptance (which is then cancelled).
const LATE_ACCEPTANCE_WAIT: Duration = Duration::from_secs(60);

/// Why a goal was not accepted.
enum Refusal {
    /// The controller rejected it.
    Rejected,
    /// No answer within [`SERVER_WAIT`].
    Late,
    /// Anything else, said.
    Other(String),
}

/// The pieces of a sent goal: its handle, its result, and the task draining its feedback.
type SentGoal<T> = (
    ActionClientGoal<T>,
    Pin<
        Box<
            dyn Future<
                    Output = Result<
                        (GoalStatus, <T as r2r::WrappedActionTypeSupport>::Result),
                        r2r::Error,
                    >,
                > + Send,
        >,
    >,
    Drain,
);

/// Sends one goal and waits for its acceptance.
async fn send_one<T>(client: &ActionClient<T>, goal: T::Goal) -> Result<SentGoal<T>, Refusal>
where
    T: r2r::WrappedActionTypeSupport + 'static,
    T::Result: Send + 'static,
    T::Feedback: Send + 'static,
{
    let mut sent = Box::pin(
        client
            .send_goal_request(goal)
            .map_err(|e| Refusal::Other(e.to_string()))?,
    );
    match tokio::time::timeout(SERVER_WAIT, &mut sent).await {
        Err(_) => {
            // The request may only be late: a controller that accepts it after all must not
            // move the robot unwatched, so its goal is cancelled as soon as it is accepted.
            tokio::spawn(async move {
                if let Ok(Ok((handle, _result, _feedback))) =
                    tokio::time::timeout(LATE_ACCEPTANCE_WAIT, sent).await
                {
                    if let Ok(done) = handle.cancel() {
                        let _ = tokio::time::timeout(SERVER_WAIT, done).await;
                    }
                }
            });
            Err(Refusal::Late)
        }
        Ok(Err(r2r::Error::RCL_RET_ACTION_GOAL_REJECTED)) => Err(Refusal::Rejected),
        Ok(Err(e)) => Err(Refusal::Other(e.to_string())),
        Ok(Ok((handle, result, mut feedback))) => {
            let drain = Drain(tokio::spawn(async move {
                while feedback.next().await.is_some() {}
            }));
            Ok((handle, Box::pin(result), drain))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gripper_outcomes_follow_reached_goal_and_stalling() {
        let result = |reached_goal: bool, stalled: bool| GripperCommand::Result {
            position: 0.04,
            effort: 1.5,
            stalled,
            reached_goal,
        };
        let (code, message) =
            gripper_outcome(GoalStatus::Succeeded, &result(true, false), "x", false);
        assert_eq!(code, codes::SUCCESS, "{message}");
        assert!(
            message.contains("goal reached") && message.contains("0.0400"),
            "{message}"
        );
        // Closed on an object: success only where stalling is allowed.
        let stalled = result(false, true);
        assert_eq!(
            gripper_outcome(GoalStatus::Succeeded, &stalled, "x", true).0,
            codes::SUCCESS
        );
        let (code, message) = gripper_outcome(GoalStatus::Aborted, &stalled, "x", false);
        assert_eq!(code, codes::CONTROL_FAILED);
        assert!(message.contains("allow_stalling"), "{message}");
        assert_eq!(
            gripper_outcome(GoalStatus::Aborted, &result(false, false), "x", true).0,
            codes::CONTROL_FAILED
        );
        assert_eq!(
            gripper_outcome(GoalStatus::Canceled, &result(false, false), "x", true).0,
            codes::PREEMPTED
        );
    }
}
