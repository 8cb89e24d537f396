//! `mock_controller`: a stand-in for a robot driven by ros2_control's
//! `joint_trajectory_controller`, for demos and tests without hardware or a simulator (as
//! MoveIt's demos use mock components).
//!
//! It owns a set of joints (parameter `joints`, starting at `initial_positions`), publishes
//! their state on `joint_states` at `publish_rate` Hz, and follows trajectories exactly: the
//! `control_msgs/FollowJointTrajectory` action `~/follow_joint_trajectory` (feedback while
//! moving, `SUCCESSFUL` at the end, cancellable) and the command topic `~/joint_trajectory`
//! (an empty trajectory stops and holds). Named `joint_trajectory_controller` by default, so
//! those are the names `planner_node` uses. Between points it moves as
//! [`Trajectory::sample`] says (cubic through positions and velocities); a trajectory whose
//! first point is later than 0 s starts from the current positions. A new trajectory replaces
//! the one being followed (an active goal is aborted, "preempted"). A trajectory naming a
//! joint it does not own, or that cannot be followed ([`Trajectory::check_followable`]), is
//! aborted with `INVALID_JOINTS` / `INVALID_GOAL` and a message saying why; the joints hold.
//!
//! With `type: GripperCommand` it stands in for ros2_control's `gripper_action_controller`
//! instead: the `control_msgs/GripperCommand` action `~/<action_ns>` (default `gripper_cmd`)
//! moves its first joint (with `parallel`, its first two, each to half the position, whose sum
//! MoveIt commands) to the commanded position in `gripper_seconds` (1) and reports `reached_goal`
//! there. `action_ns` renames the trajectory action too, so one mock per controller of a MoveIt
//! `moveit_controllers.yaml` answers where `planner_node` sends (the launch file's
//! `mock_controller:=true` with `moveit_config` or `controllers_file`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use r2r::builtin_interfaces::msg::Time;
use r2r::control_msgs::action::{FollowJointTrajectory, GripperCommand};
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::Header;
use r2r::trajectory_msgs::msg::{JointTrajectory, JointTrajectoryPoint};
use r2r::{ActionServerGoal, ParameterValue, QosProfile};

use super::controllers::Grip;
use super::execute::Follow;
use super::plan::from_message;
use super::NodeError;
use crate::trajectory::{Trajectory, TrajectoryPoint};

/// The node's default name: that of the controller `planner_node` sends to.
pub const MOCK_NODE_NAME: &str = "joint_trajectory_controller";

/// The joints of the mock robot and the trajectory they follow; no ROS types.
#[derive(Debug, Clone)]
pub struct MockRobot {
    joints: Vec<String>,
    positions: Vec<f64>,
    velocities: Vec<f64>,
    motion: Option<Motion>,
}

/// A trajectory being followed.
#[derive(Debug, Clone)]
struct Motion {
    trajectory: Trajectory,
    /// For each joint of the trajectory, its index among the robot's joints.
    columns: Vec<usize>,
    /// When it started (seconds on the caller's clock).
    started: f64,
}

/// What [`MockRobot::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// No trajectory is being followed.
    Idle,
    /// Moving along a trajectory.
    Moving,
    /// The trajectory ended at this step; the joints hold its last point.
    Finished,
}

impl MockRobot {
    /// A robot with `joints` at `initial` (empty: all zero); the error says what is wrong.
    pub fn new(joints: Vec<String>, initial: Vec<f64>) -> Result<MockRobot, String> {
        if joints.is_empty() {
            return Err("parameter 'joints' must name the controlled joints".into());
        }
        for (i, j) in joints.iter().enumerate() {
            if joints[..i].contains(j) {
                return Err(format!("parameter 'joints' names '{j}' twice"));
            }
        }
        let positions = if initial.is_empty() {
            vec![0.0; joints.len()]
        } else {
            initial
        };
        if positions.len() != joints.len() || positions.iter().any(|p| !p.is_finite()) {
            return Err(format!(
                "parameter 'initial_positions' needs {} finite values (one per joint), got {:?}",
                joints.len(),
                positions
            ));
        }
        let velocities = vec![0.0; joints.len()];
        Ok(MockRobot {
            joints,
            positions,
            velocities,
            motion: None,
        })
    }

    /// The joint names.
    pub fn joints(&self) -> &[String] {
        &self.joints
    }

    /// The current joint positions.
    pub fn positions(&self) -> &[f64] {
        &self.positions
    }

    /// The current joint velocities.
    pub fn velocities(&self) -> &[f64] {
        &self.velocities
    }

    /// Whether a trajectory is being followed.
    pub fn is_moving(&self) -> bool {
        self.motion.is_some()
    }

    /// Starts following `trajectory` at `now` (seconds), replacing any other. On error
    /// (`Err((invalid_joints, why))`: a joint it does not own or named twice, or a trajectory
    /// it cannot follow) nothing changes.
    pub fn start(&mut self, mut trajectory: Trajectory, now: f64) -> Result<(), (bool, String)> {
        let mut columns = Vec::with_capacity(trajectory.joint_names.len());
        for (i, name) in trajectory.joint_names.iter().enumerate() {
            if trajectory.joint_names[..i].contains(name) {
                return Err((true, format!("joint '{name}' is named twice")));
            }
            match self.joints.iter().position(|j| j == name) {
                Some(c) => columns.push(c),
                None => {
                    return Err((
                        true,
                        format!(
                            "joint '{name}' is not one of this controller's joints {:?}",
                            self.joints
                        ),
                    ))
                }
            }
        }
        trajectory.check_followable().map_err(|e| (false, e))?;
        if trajectory.points[0].time_from_start > 0.0 {
            // As a joint trajectory controller does: from where the joints are now.
            let here = TrajectoryPoint {
                positions: columns.iter().map(|&c| self.positions[c]).collect(),
                velocities: Vec::new(),
                accelerations: Vec::new(),
                time_from_start: 0.0,
            };
            trajectory.points.insert(0, here);
        }
        self.motion = Some(Motion {
            trajectory,
            columns,
            started: now,
        });
        Ok(())
    }

    /// Stops where the joints are and holds.
    pub fn hold(&mut self) {
        self.motion = None;
        self.velocities.iter_mut().for_each(|v| *v = 0.0);
    }

    /// Moves the joints to where the trajectory puts them at `now` (seconds).
    pub fn advance(&mut self, now: f64) -> Progress {
        let Some(m) = &self.motion else {
            return Progress::Idle;
        };
        let t = now - m.started;
        let (q, v) = m.trajectory.sample(t);
        let done = t >= m.trajectory.duration();
        for (k, &c) in m.columns.iter().enumerate() {
            self.positions[c] = q[k];
            self.velocities[c] = if done { 0.0 } else { v[k] };
        }
        if done {
            self.motion = None;
            Progress::Finished
        } else {
            Progress::Moving
        }
    }

    /// The motion of a gripper command to `position`: from where they are, the first joint
    /// (with `parallel`, the first two, each to `position / 2`) reaching it after `seconds`.
    pub fn gripper_motion(
        &self,
        position: f64,
        parallel: bool,
        seconds: f64,
    ) -> Result<Trajectory, String> {
        if !position.is_finite() {
            return Err(format!("position {position} is not finite"));
        }
        let n = if parallel { 2 } else { 1 };
        if self.joints.len() < n {
            return Err("a parallel gripper needs two joints".into());
        }
        let target = if parallel { position / 2.0 } else { position };
        let point = |q: Vec<f64>, t: f64| TrajectoryPoint {
            positions: q,
            velocities: vec![0.0; n],
            accelerations: Vec::new(),
            time_from_start: t,
        };
        Ok(Trajectory {
            joint_names: self.joints[..n].to_vec(),
            points: vec![
                point(self.positions[..n].to_vec(), 0.0),
                point(vec![target; n], seconds.max(1e-3)),
            ],
        })
    }

    /// A gripper's position as its controller reports it: the first joint's, or with
    /// `parallel` the sum of the first two.
    pub fn gripper_position(&self, parallel: bool) -> f64 {
        if parallel && self.positions.len() >= 2 {
            self.positions[0] + self.positions[1]
        } else {
            self.positions[0]
        }
    }

    /// The joint names and current positions and velocities of the trajectory being
    /// followed, in its joint order (`None` when idle).
    pub fn followed(&self) -> Option<(Vec<String>, Vec<f64>, Vec<f64>)> {
        let m = self.motion.as_ref()?;
        Some((
            m.trajectory.joint_names.clone(),
            m.columns.iter().map(|&c| self.positions[c]).collect(),
            m.columns.iter().map(|&c| self.velocities[c]).collect(),
        ))
    }
}

/// The wall-clock time as a ROS time (the node does not use simulated time).
fn now_stamp() -> Time {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Time {
        sec: i32::try_from(d.as_secs()).unwrap_or(i32::MAX),
        nanosec: d.subsec_nanos(),
    }
}

/// A string array or double array parameter from the node's parameter map.
fn strings(map: &r2r::indexmap::IndexMap<String, r2r::Parameter>, name: &str) -> Vec<String> {
    match map.get(name).map(|p| &p.value) {
        Some(ParameterValue::StringArray(v)) => v.clone(),
        _ => Vec::new(),
    }
}

fn doubles(map: &r2r::indexmap::IndexMap<String, r2r::Parameter>, name: &str) -> Vec<f64> {
    match map.get(name).map(|p| &p.value) {
        Some(ParameterValue::DoubleArray(v)) => v.clone(),
        Some(ParameterValue::IntegerArray(v)) => v.iter().map(|&x| x as f64).collect(),
        _ => Vec::new(),
    }
}

/// A string parameter (`default` when unset).
fn string(
    map: &r2r::indexmap::IndexMap<String, r2r::Parameter>,
    name: &str,
    default: &str,
) -> String {
    match map.get(name).map(|p| &p.value) {
        Some(ParameterValue::String(v)) if !v.is_empty() => v.clone(),
        _ => default.to_string(),
    }
}

/// What the mock stands in for: the `type` of a MoveIt controllers file entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockKind {
    /// A `joint_trajectory_controller`.
    Trajectory,
    /// A `gripper_action_controller`.
    Gripper,
}

/// The mock's settings besides its joints: what it stands in for, its action's name under the
/// node, whether a gripper is parallel, and how long a gripper command takes.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// Trajectory or gripper controller.
    pub kind: MockKind,
    /// The action's name under the node (`~/<action_ns>`).
    pub action_ns: String,
    /// A parallel gripper (two joints, position = their sum).
    pub parallel: bool,
    /// Seconds a gripper command takes.
    pub gripper_seconds: f64,
}

impl MockSettings {
    /// The settings of parameters `type`, `action_ns`, `parallel` and `gripper_seconds`; the
    /// error names the parameter.
    pub fn new(
        kind: &str,
        action_ns: Option<&str>,
        parallel: bool,
        gripper_seconds: f64,
        joints: usize,
    ) -> Result<Self, String> {
        let kind = match kind {
            "FollowJointTrajectory" => MockKind::Trajectory,
            "GripperCommand" => MockKind::Gripper,
            other => {
                return Err(format!(
                "parameter 'type' must be FollowJointTrajectory or GripperCommand, got '{other}'"
            ))
            }
        };
        let action_ns = action_ns
            .map(|a| a.trim_matches('/').to_string())
            .unwrap_or_else(|| match kind {
                MockKind::Trajectory => "follow_joint_trajectory".into(),
                MockKind::Gripper => "gripper_cmd".into(),
            });
        if action_ns.is_empty() {
            return Err("parameter 'action_ns' is empty".into());
        }
        if !(gripper_seconds.is_finite() && gripper_seconds > 0.0 && gripper_seconds <= 60.0) {
            return Err(format!(
                "parameter 'gripper_seconds' must be in (0, 60], got {gripper_seconds}"
            ));
        }
        if kind == MockKind::Gripper && parallel && joints < 2 {
            return Err("parameter 'parallel' needs two joints".into());
        }
        Ok(Self {
            kind,
            action_ns,
            parallel,
            gripper_seconds,
        })
    }
}

/// The result of a goal, with `code` and `why`.
fn result(code: i32, why: impl Into<String>) -> FollowJointTrajectory::Result {
    FollowJointTrajectory::Result {
        error_code: code,
        error_string: why.into(),
    }
}

/// The next goal request of an action server the mock has (never, for one it has not).
async fn next_goal<S: futures::Stream + Unpin>(server: &mut Option<S>) -> Option<S::Item> {
    match server {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// Accepts every cancel request of a goal and sends its id on `tx`.
fn forward_cancels(
    cancel_requests: impl futures::Stream<Item = r2r::ActionServerCancelRequest>
        + Unpin
        + Send
        + 'static,
    tx: tokio::sync::mpsc::UnboundedSender<r2r::uuid::Uuid>,
) {
    tokio::spawn(async move {
        let mut cancel_requests = cancel_requests;
        while let Some(c) = cancel_requests.next().await {
            let uuid = c.uuid;
            c.accept();
            if tx.send(uuid).is_err() {
                break;
            }
        }
    });
}

/// Runs the mock controller until SIGINT/SIGTERM.
pub fn run() -> Result<(), NodeError> {
    super::on_runtime(run_async())
}

async fn run_async() -> Result<(), NodeError> {
    let ctx = r2r::Context::create()?;
    let mut node = r2r::Node::create(ctx, MOCK_NODE_NAME, "")?;
    let logger = node.logger().to_owned();
    let number =
        |map: &r2r::indexmap::IndexMap<String, r2r::Parameter>, name: &str, default| match map
            .get(name)
            .map(|p| &p.value)
        {
            Some(ParameterValue::Double(r)) => *r,
            Some(ParameterValue::Integer(r)) => *r as f64,
            _ => default,
        };
    let (joints, initial, rate, settings) = {
        let map = super::lock(&node.params);
        let joints = strings(&map, "joints");
        let action_ns = match map.get("action_ns").map(|p| &p.value) {
            Some(ParameterValue::String(a)) => Some(a.clone()),
            _ => None,
        };
        let parallel = matches!(
            map.get("parallel").map(|p| &p.value),
            Some(ParameterValue::Bool(true))
        );
        let settings = MockSettings::new(
            &string(&map, "type", "FollowJointTrajectory"),
            action_ns.as_deref(),
            parallel,
            number(&map, "gripper_seconds", 1.0),
            joints.len(),
        );
        (
            joints,
            doubles(&map, "initial_positions"),
            number(&map, "publish_rate", 50.0),
            settings,
        )
    };
    let (mut robot, settings) =
        match MockRobot::new(joints, initial).and_then(|r| Ok((r, settings?))) {
            Ok(r) => r,
            Err(e) => {
                r2r::log_error!(&logger, "{e}");
                return Err(NodeError::Config(e));
            }
        };
    if !(rate.is_finite() && rate > 0.0 && rate <= 1000.0) {
        let e = format!("parameter 'publish_rate' must be in (0, 1000] Hz, got {rate}");
        r2r::log_error!(&logger, "{e}");
        return Err(NodeError::Config(e));
    }
    let action = format!("~/{}", settings.action_ns);
    let mut goals = match settings.kind {
        MockKind::Trajectory => Some(node.create_action_server::<Follow>(&action)?),
        MockKind::Gripper => None,
    };
    let mut grips = match settings.kind {
        MockKind::Gripper => Some(node.create_action_server::<Grip>(&action)?),
        MockKind::Trajectory => None,
    };
    let mut commands =
        node.subscribe::<JointTrajectory>("~/joint_trajectory", QosProfile::default())?;
    let states = node.create_publisher::<JointState>("joint_states", QosProfile::default())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                node.spin_once(Duration::from_millis(20));
            }
        })
    };
    r2r::log_info!(
        &logger,
        "mock {} controller of {:?} at {:?} ({action}), publishing joint_states at {rate} Hz",
        match settings.kind {
            MockKind::Trajectory => "trajectory",
            MockKind::Gripper => "gripper",
        },
        robot.joints(),
        robot.positions()
    );

    let clock = Instant::now();
    let seconds = move || clock.elapsed().as_secs_f64();
    let (cancel_tx, mut cancels) = tokio::sync::mpsc::unbounded_channel::<r2r::uuid::Uuid>();
    // The goal being followed, if it came through the action.
    let mut active: Option<ActionServerGoal<Follow>> = None;
    // The gripper goal being carried out.
    let mut active_grip: Option<ActionServerGoal<Grip>> = None;
    let grip_result = |robot: &MockRobot, reached: bool| GripperCommand::Result {
        position: robot.gripper_position(settings.parallel),
        effort: 0.0,
        stalled: false,
        reached_goal: reached,
    };
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let shutdown = super::wait_for_shutdown_signal();
    tokio::pin!(shutdown);
    // Ends the active goal (if any) with `outcome`.
    let finish =
        |active: &mut Option<ActionServerGoal<Follow>>,
         outcome: &dyn Fn(&mut ActionServerGoal<Follow>) -> r2r::Result<()>| {
            if let Some(mut goal) = active.take() {
                if let Err(e) = outcome(&mut goal) {
                    r2r::log_warn!(&logger, "could not end a goal: {e}");
                }
            }
        };
    loop {
        tokio::select! {
            signal = &mut shutdown => {
                r2r::log_info!(&logger, "{signal}: shutting down");
                break;
            }
            _ = tick.tick() => {
                let progress = robot.advance(seconds());
                if let (Some(a), Some((names, q, v))) = (&active, robot.followed()) {
                    let point = JointTrajectoryPoint { positions: q, velocities: v, ..Default::default() };
                    let feedback = FollowJointTrajectory::Feedback {
                        header: Header { stamp: now_stamp(), frame_id: String::new() },
                        joint_names: names,
                        desired: point.clone(),
                        actual: point,
                        ..Default::default()
                    };
                    if let Err(e) = a.publish_feedback(feedback) {
                        r2r::log_warn!(&logger, "feedback: {e}");
                    }
                }
                if progress == Progress::Finished {
                    finish(&mut active, &|g| g.succeed(result(0, "")));
                    if let Some(mut g) = active_grip.take() {
                        if let Err(e) = g.succeed(grip_result(&robot, true)) {
                            r2r::log_warn!(&logger, "could not end a goal: {e}");
                        }
                    }
                    r2r::log_info!(&logger, "trajectory done at {:?}", robot.positions());
                }
                let msg = JointState {
                    header: Header { stamp: now_stamp(), frame_id: String::new() },
                    name: robot.joints().to_vec(),
                    position: robot.positions().to_vec(),
                    velocity: robot.velocities().to_vec(),
                    effort: Vec::new(),
                };
                if let Err(e) = states.publish(&msg) {
                    r2r::log_warn!(&logger, "joint_states: {e}");
                }
            }
            Some(request) = next_goal(&mut grips) => {
                let command = request.goal.command.clone();
                let (goal, cancel_requests) = match request.accept() {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        r2r::log_warn!(&logger, "could not accept a goal: {e}");
                        continue;
                    }
                };
                let motion = robot.gripper_motion(command.position, settings.parallel, settings.gripper_seconds);
                match motion.and_then(|m| robot.start(m, seconds()).map_err(|(_, why)| why)) {
                    Ok(()) => {
                        if let Some(mut old) = active_grip.take() {
                            if let Err(e) = old.abort(grip_result(&robot, false)) {
                                r2r::log_warn!(&logger, "could not end a goal: {e}");
                            }
                        }
                        r2r::log_info!(&logger, "goal {}: gripper to {}", goal.uuid, command.position);
                        forward_cancels(cancel_requests, cancel_tx.clone());
                        active_grip = Some(goal);
                    }
                    Err(why) => {
                        r2r::log_warn!(&logger, "goal {}: {why}", goal.uuid);
                        let mut goal = goal;
                        if let Err(e) = goal.abort(grip_result(&robot, false)) {
                            r2r::log_warn!(&logger, "could not abort a goal: {e}");
                        }
                    }
                }
            }
            Some(request) = next_goal(&mut goals) => {
                let trajectory = from_message(&request.goal.trajectory);
                let points = trajectory.points.len();
                let (goal, cancel_requests) = match request.accept() {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        r2r::log_warn!(&logger, "could not accept a goal: {e}");
                        continue;
                    }
                };
                match robot.start(trajectory, seconds()) {
                    Ok(()) => {
                        finish(&mut active, &|g| g.abort(result(
                            FollowJointTrajectory::Result::INVALID_GOAL as i32,
                            "preempted by a newer goal",
                        )));
                        r2r::log_info!(&logger, "goal {}: following {points} points", goal.uuid);
                        forward_cancels(cancel_requests, cancel_tx.clone());
                        active = Some(goal);
                    }
                    Err((joints, why)) => {
                        let code = if joints {
                            FollowJointTrajectory::Result::INVALID_JOINTS as i32
                        } else {
                            FollowJointTrajectory::Result::INVALID_GOAL as i32
                        };
                        r2r::log_warn!(&logger, "goal {}: {why}", goal.uuid);
                        let mut goal = goal;
                        if let Err(e) = goal.abort(result(code, why)) {
                            r2r::log_warn!(&logger, "could not abort a goal: {e}");
                        }
                    }
                }
            }
            Some(uuid) = cancels.recv() => {
                if active.as_ref().is_some_and(|a| a.uuid == uuid) {
                    robot.hold();
                    finish(&mut active, &|g| g.cancel(result(0, "cancelled: holding position")));
                    r2r::log_info!(&logger, "goal {uuid} cancelled at {:?}", robot.positions());
                }
                if active_grip.as_ref().is_some_and(|a| a.uuid == uuid) {
                    robot.hold();
                    if let Some(mut g) = active_grip.take() {
                        if let Err(e) = g.cancel(grip_result(&robot, false)) {
                            r2r::log_warn!(&logger, "could not end a goal: {e}");
                        }
                    }
                    r2r::log_info!(&logger, "goal {uuid} cancelled at {:?}", robot.positions());
                }
            }
            Some(msg) = commands.next() => {
                if msg.points.is_empty() {
                    robot.hold();
                    finish(&mut active, &|g| g.abort(result(
                        FollowJointTrajectory::Result::INVALID_GOAL as i32,
                        "stopped by an empty trajectory on ~/joint_trajectory",
                    )));
                    r2r::log_info!(&logger, "stopped at {:?}", robot.positions());
                    continue;
                }
                match robot.start(from_message(&msg), seconds()) {
                    Ok(()) => {
                        finish(&mut active, &|g| g.abort(result(
                            FollowJointTrajectory::Result::INVALID_GOAL as i32,
                            "preempted by a trajectory on ~/joint_trajectory",
                        )));
                        r2r::log_info!(&logger, "following {} points from ~/joint_trajectory", msg.points.len());
                    }
                    Err((_, why)) => r2r::log_warn!(&logger, "~/joint_trajectory: {why}; ignored"),
                }
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Err(e) = spinner.await {
        r2r::log_error!(&logger, "spin task failed: {e}");
    }
    r2r::log_info!(&logger, "stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_joints() -> MockRobot {
        MockRobot::new(vec!["a".into(), "b".into()], vec![0.5, -0.5]).expect("robot")
    }

    fn line(names: &[&str], from: &[f64], to: &[f64], t0: f64, t1: f64) -> Trajectory {
        let point = |q: &[f64], t| TrajectoryPoint {
            positions: q.to_vec(),
            velocities: Vec::new(),
            accelerations: Vec::new(),
            time_from_start: t,
        };
        Trajectory {
            joint_names: names.iter().map(|s| s.to_string()).collect(),
            points: vec![point(from, t0), point(to, t1)],
        }
    }

    #[test]
    fn follows_a_subset_of_its_joints_and_stops_at_the_end() {
        let mut r = two_joints();
        assert_eq!(r.advance(1.0), Progress::Idle);
        r.start(line(&["b"], &[-0.5], &[0.5], 0.0, 2.0), 10.0)
            .expect("start");
        assert_eq!(r.advance(11.0), Progress::Moving);
        assert!((r.positions()[1] - 0.0).abs() < 1e-12);
        assert!((r.velocities()[1] - 0.5).abs() < 1e-12);
        assert_eq!(r.positions()[0], 0.5, "the other joint holds");
        assert_eq!(r.advance(12.5), Progress::Finished);
        assert_eq!(r.positions(), &[0.5, 0.5]);
        assert_eq!(r.velocities(), &[0.0, 0.0]);
        assert_eq!(r.advance(13.0), Progress::Idle);
    }

    #[test]
    fn a_late_first_point_starts_from_where_the_joints_are() {
        let mut r = two_joints();
        r.start(line(&["a", "b"], &[1.5, 0.5], &[2.5, 0.5], 1.0, 2.0), 0.0)
            .expect("start");
        r.advance(0.5);
        // Halfway from (0.5, -0.5) to the first point (1.5, 0.5).
        assert!((r.positions()[0] - 1.0).abs() < 1e-12);
        assert!((r.positions()[1] - 0.0).abs() < 1e-12);
    }

    #[test]
    fn hold_stops_and_bad_trajectories_change_nothing() {
        let mut r = two_joints();
        r.start(line(&["a"], &[0.5], &[1.5], 0.0, 1.0), 0.0)
            .expect("start");
        r.advance(0.5);
        r.hold();
        assert!(!r.is_moving());
        assert_eq!(r.advance(5.0), Progress::Idle);
        assert!((r.positions()[0] - 1.0).abs() < 1e-12);
        let (joints, why) = r
            .start(line(&["c"], &[0.0], &[1.0], 0.0, 1.0), 0.0)
            .unwrap_err();
        assert!(joints && why.contains("'c'"), "{why}");
        let (joints, why) = r
            .start(line(&["a", "a"], &[0.0, 0.0], &[1.0, 1.0], 0.0, 1.0), 0.0)
            .unwrap_err();
        assert!(joints && why.contains("twice"), "{why}");
        let (joints, why) = r
            .start(line(&["a"], &[0.0], &[1.0], 1.0, 1.0), 0.0)
            .unwrap_err();
        assert!(!joints && why.contains("time_from_start"), "{why}");
        assert!(!r.is_moving());
        assert!((r.positions()[0] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_gripper_moves_its_command_joint_or_both_halves() {
        let mut r = two_joints();
        let m = r.gripper_motion(0.08, false, 0.5).expect("motion");
        assert_eq!(m.joint_names, vec!["a".to_string()]);
        r.start(m, 0.0).expect("start");
        assert_eq!(r.advance(0.25), Progress::Moving);
        assert_eq!(r.advance(0.5), Progress::Finished);
        assert!((r.gripper_position(false) - 0.08).abs() < 1e-12);
        assert_eq!(r.positions()[1], -0.5, "the second joint holds");
        let m = r.gripper_motion(0.06, true, 1.0).expect("parallel motion");
        r.start(m, 0.0).expect("start");
        r.advance(1.0);
        assert!((r.positions()[0] - 0.03).abs() < 1e-12);
        assert!((r.positions()[1] - 0.03).abs() < 1e-12);
        assert!((r.gripper_position(true) - 0.06).abs() < 1e-12);
        assert!(r.gripper_motion(f64::NAN, false, 1.0).is_err());
        let one = MockRobot::new(vec!["f".into()], vec![]).expect("robot");
        assert!(one
            .gripper_motion(0.1, true, 1.0)
            .unwrap_err()
            .contains("two joints"));
    }

    #[test]
    fn mock_settings_follow_the_controllers_file_types() {
        let t =
            MockSettings::new("FollowJointTrajectory", None, false, 0.5, 6).expect("trajectory");
        assert_eq!(
            (t.kind, t.action_ns.as_str()),
            (MockKind::Trajectory, "follow_joint_trajectory")
        );
        let g = MockSettings::new("GripperCommand", Some("/gripper_action/"), true, 0.5, 2)
            .expect("gripper");
        assert_eq!(
            (g.kind, g.action_ns.as_str()),
            (MockKind::Gripper, "gripper_action")
        );
        assert_eq!(
            MockSettings::new("GripperCommand", None, false, 0.5, 1)
                .expect("default")
                .action_ns,
            "gripper_cmd"
        );
        assert!(MockSettings::new("Velocity", None, false, 0.5, 1)
            .unwrap_err()
            .contains("'type'"));
        assert!(
            MockSettings::new("GripperCommand", Some("/"), false, 0.5, 1)
                .unwrap_err()
                .contains("action_ns")
        );
        assert!(MockSettings::new("GripperCommand", None, true, 0.5, 1)
            .unwrap_err()
            .contains("parallel"));
        assert!(MockSettings::new("GripperCommand", None, false, 0.0, 1)
            .unwrap_err()
            .contains("gripper_seconds"));
    }

    #[test]
    fn bad_parameters_are_named() {
        assert!(MockRobot::new(vec![], vec![])
            .unwrap_err()
            .contains("joints"));
        assert!(MockRobot::new(vec!["a".into(), "a".into()], vec![])
            .unwrap_err()
            .contains("twice"));
        assert!(MockRobot::new(vec!["a".into()], vec![1.0, 2.0])
            .unwrap_err()
            .contains("initial_positions"));
        assert_eq!(
            MockRobot::new(vec!["a".into()], vec![])
                .expect("zeros")
                .positions(),
            &[0.0]
        );
    }
}
