//! `~/plan` (PlanPath): request → [`ServicePlanRequest`], [`PlanningService::plan`], and the
//! answer (trajectory, statistics, error code and message); `~/plan_batch` (PlanBatch): the
//! same per problem through [`PlanningService::plan_batch`].
//!
//! A zero/empty/negative request field means "the node's parameter", which the service's
//! settings hold; every value is checked by the service, whose errors name the input.

use r2r::builtin_interfaces::msg::Duration as DurationMsg;
use r2r::geometry_msgs::msg::PoseStamped;
use r2r::gpu_motion_planner_interfaces::msg::{PathConstraints, PlanningStats};
use r2r::gpu_motion_planner_interfaces::srv::{PlanBatch, PlanPath};
use r2r::std_msgs::msg::Header;
use r2r::trajectory_msgs::msg::{JointTrajectory, JointTrajectoryPoint};

use crate::planners::PlanStats;
use crate::robot::constraint::{ConstraintSpec, JointSpec, OrientationSpec, PositionSpec};
use crate::service::{
    ErrorCategory, PlanningService, PoseSearch, ServiceError, ServicePlanRequest,
    ServicePlanResponse, ServicePoseGoal, SpeedLimit,
};
use crate::trajectory::{LinkSpeed, Trajectory, TrajectoryPoint};

// PlanPath error codes as plain integers (r2r generates the .srv constants as enums).
/// MoveIt's SUCCESS error code.
pub const SUCCESS: i32 = PlanPath::Response::SUCCESS as i32;
const FAILURE: i32 = PlanPath::Response::FAILURE as i32;
const PLANNING_FAILED: i32 = PlanPath::Response::PLANNING_FAILED as i32;
const INVALID_MOTION_PLAN: i32 = PlanPath::Response::INVALID_MOTION_PLAN as i32;
const START_STATE_IN_COLLISION: i32 = PlanPath::Response::START_STATE_IN_COLLISION as i32;
const START_STATE_VIOLATES_PATH_CONSTRAINTS: i32 =
    PlanPath::Response::START_STATE_VIOLATES_PATH_CONSTRAINTS as i32;
const GOAL_IN_COLLISION: i32 = PlanPath::Response::GOAL_IN_COLLISION as i32;
const INVALID_GROUP_NAME: i32 = PlanPath::Response::INVALID_GROUP_NAME as i32;
const INVALID_GOAL_CONSTRAINTS: i32 = PlanPath::Response::INVALID_GOAL_CONSTRAINTS as i32;
const INVALID_ROBOT_STATE: i32 = PlanPath::Response::INVALID_ROBOT_STATE as i32;
const INVALID_OBJECT_NAME: i32 = PlanPath::Response::INVALID_OBJECT_NAME as i32;
const ROBOT_STATE_STALE: i32 = PlanPath::Response::ROBOT_STATE_STALE as i32;
const NO_IK_SOLUTION: i32 = PlanPath::Response::NO_IK_SOLUTION as i32;

/// The service request of a PlanPath request. Empty `start_state.name` means the current
/// joint state; empty `planner_id`, zero `allowed_planning_time`, negative `seed` and zero
/// scaling factors mean the node's parameters.
pub fn service_request(req: &PlanPath::Request) -> ServicePlanRequest {
    let start = if req.start_state.name.is_empty() {
        None
    } else {
        Some((
            req.start_state.name.clone(),
            req.start_state.position.clone(),
        ))
    };
    let nonzero = |x: f64| if x == 0.0 { None } else { Some(x) };
    ServicePlanRequest {
        start,
        goal: (req.goal_state.name.clone(), req.goal_state.position.clone()),
        planner: if req.planner_id.is_empty() {
            None
        } else {
            Some(req.planner_id.clone())
        },
        time_limit: nonzero(req.allowed_planning_time),
        seed: u64::try_from(req.seed).ok(),
        vel_scale: nonzero(req.max_velocity_scaling_factor),
        acc_scale: nonzero(req.max_acceleration_scaling_factor),
        attempts: (req.num_planning_attempts != 0).then_some(i64::from(req.num_planning_attempts)),
        goal_pose: pose_goal(req),
        goal_name: (!req.goal_name.is_empty()).then(|| req.goal_name.clone()),
        path_constraints: path_constraints(&req.path_constraints),
        goal_constraints: path_constraints(&req.goal_constraints),
        group: (!req.group_name.is_empty()).then(|| req.group_name.clone()),
        speed_limit: speed_limit(&req.cartesian_speed_limited_link, req.max_cartesian_speed),
        other_goals: req
            .other_goal_states
            .iter()
            .map(|g| (g.name.clone(), g.position.clone()))
            .collect(),
        other_goal_poses: req
            .other_goal_poses
            .iter()
            .map(|ps| pose_goal_of(req, ps))
            .collect(),
    }
}

/// What a speed limit did, for a response's message ("" without one).
pub fn speed_note(speed: Option<&LinkSpeed>) -> String {
    match speed {
        Some(s) if s.factor > 1.0 => format!(
            "; slowed {} for '{}' from {:.3} s to {:.3} s, to at most {:.3} m/s and {:.3} rad/s \
             (was {:.3} m/s, {:.3} rad/s)",
            if s.retimed {
                "where too fast"
            } else {
                "uniformly"
            },
            s.link,
            s.duration.0,
            s.duration.1,
            s.peak_after,
            s.angular_peak.1,
            s.peak_before,
            s.angular_peak.0
        ),
        Some(s) => format!(
            "; '{}' within its speed limit at {:.3} m/s and {:.3} rad/s",
            s.link, s.peak_before, s.angular_peak.0
        ),
        None => String::new(),
    }
}

/// The speed limit of a request's `cartesian_speed_limited_link` and `max_cartesian_speed`;
/// none for speed 0 (as MoveIt, which leaves the trajectory as it is for a speed <= 0; a
/// negative one is passed on, for the service to refuse by name).
pub fn speed_limit(link: &str, max_speed: f64) -> Option<SpeedLimit> {
    (max_speed != 0.0).then(|| SpeedLimit {
        link: (!link.is_empty()).then(|| link.to_string()),
        max_speed,
    })
}

/// The path constraints of a PlanPath request, frames and links by name (the service
/// resolves and checks them).
pub fn path_constraints(msg: &PathConstraints) -> ConstraintSpec {
    let quat = |q: &r2r::geometry_msgs::msg::Quaternion| [q.x, q.y, q.z, q.w];
    let xyz = |v: &r2r::geometry_msgs::msg::Vector3| [v.x, v.y, v.z];
    ConstraintSpec {
        name: msg.name.clone(),
        orientation: msg
            .orientation_constraints
            .iter()
            .map(|c| OrientationSpec {
                frame: c.header.frame_id.clone(),
                link: c.link_name.clone(),
                orientation: quat(&c.orientation),
                tolerance: [
                    c.absolute_x_axis_tolerance,
                    c.absolute_y_axis_tolerance,
                    c.absolute_z_axis_tolerance,
                ],
                parameterization: i64::from(c.parameterization),
            })
            .collect(),
        position: msg
            .position_constraints
            .iter()
            .map(|c| {
                let p = &c.region_pose.position;
                PositionSpec {
                    frame: c.header.frame_id.clone(),
                    link: c.link_name.clone(),
                    offset: xyz(&c.target_point_offset),
                    position: [p.x, p.y, p.z],
                    orientation: quat(&c.region_pose.orientation),
                    size: xyz(&c.region_size),
                }
            })
            .collect(),
        joint: msg
            .joint_constraints
            .iter()
            .map(|c| JointSpec {
                joint: c.joint_name.clone(),
                position: c.position,
                below: c.tolerance_below,
                above: c.tolerance_above,
            })
            .collect(),
    }
}

/// The pose goal of a PlanPath request, `None` when it gives none: a pose goal counts as
/// given when `goal_pose.header.frame_id` or `goal_link` is set or the position is not all
/// zero (the message's default). Zero tolerances mean the defaults.
pub fn pose_goal(req: &PlanPath::Request) -> Option<ServicePoseGoal> {
    let ps = &req.goal_pose;
    let p = &ps.pose.position;
    let pose_given = !ps.header.frame_id.is_empty()
        || !req.goal_link.is_empty()
        || [p.x, p.y, p.z].iter().any(|v| *v != 0.0);
    if !pose_given {
        return None;
    }
    Some(pose_goal_of(req, ps))
}

/// The pose goal `ps` with the request's goal link, position-only flag and tolerances (zero
/// tolerances mean the defaults).
fn pose_goal_of(req: &PlanPath::Request, ps: &PoseStamped) -> ServicePoseGoal {
    let (p, o) = (&ps.pose.position, &ps.pose.orientation);
    let nonzero = |x: f64| if x == 0.0 { None } else { Some(x) };
    ServicePoseGoal {
        frame: ps.header.frame_id.clone(),
        link: (!req.goal_link.is_empty()).then(|| req.goal_link.clone()),
        position: [p.x, p.y, p.z],
        orientation: (!req.goal_position_only).then_some([o.x, o.y, o.z, o.w]),
        position_tolerance: nonzero(req.goal_position_tolerance),
        orientation_tolerance: nonzero(req.goal_orientation_tolerance),
    }
}

/// The PlanPath error code of an error category (MoveIt error code values).
pub fn error_code(category: ErrorCategory) -> i32 {
    match category {
        ErrorCategory::InvalidStart => INVALID_ROBOT_STATE,
        ErrorCategory::InvalidGoal => INVALID_GOAL_CONSTRAINTS,
        ErrorCategory::StaleState => ROBOT_STATE_STALE,
        ErrorCategory::StartInCollision => START_STATE_IN_COLLISION,
        ErrorCategory::StartViolatesConstraints => START_STATE_VIOLATES_PATH_CONSTRAINTS,
        ErrorCategory::GoalInCollision => GOAL_IN_COLLISION,
        ErrorCategory::InvalidGroup => INVALID_GROUP_NAME,
        ErrorCategory::PlanningFailed => PLANNING_FAILED,
        ErrorCategory::InvalidMotionPlan => INVALID_MOTION_PLAN,
        ErrorCategory::InvalidObject => INVALID_OBJECT_NAME,
        ErrorCategory::NoIkSolution => NO_IK_SOLUTION,
        ErrorCategory::Failure => FAILURE,
    }
}

/// `t` seconds as a ROS duration; negative or non-finite times become 0, huge ones saturate.
pub fn duration(t: f64) -> DurationMsg {
    if !(t.is_finite() && t > 0.0) {
        return DurationMsg { sec: 0, nanosec: 0 };
    }
    if t >= i32::MAX as f64 {
        return DurationMsg {
            sec: i32::MAX,
            nanosec: 999_999_999,
        };
    }
    let sec = t.floor();
    let nanosec = ((t - sec) * 1e9).round().clamp(0.0, 999_999_999.0);
    DurationMsg {
        sec: sec as i32,
        nanosec: nanosec as u32,
    }
}

/// The seconds of a `builtin_interfaces/Duration` (the inverse of [`duration`]).
pub fn seconds(d: &DurationMsg) -> f64 {
    f64::from(d.sec) + f64::from(d.nanosec) * 1e-9
}

/// A `JointTrajectory` message as a [`Trajectory`] (seconds from the start of each point).
pub fn from_message(msg: &JointTrajectory) -> Trajectory {
    Trajectory {
        joint_names: msg.joint_names.clone(),
        points: msg
            .points
            .iter()
            .map(|p| TrajectoryPoint {
                positions: p.positions.clone(),
                velocities: p.velocities.clone(),
                accelerations: p.accelerations.clone(),
                time_from_start: seconds(&p.time_from_start),
            })
            .collect(),
    }
}

/// The JointTrajectory message of a trajectory, in `frame_id`.
pub fn joint_trajectory(traj: &Trajectory, frame_id: &str) -> JointTrajectory {
    JointTrajectory {
        header: Header {
            frame_id: frame_id.to_string(),
            ..Default::default()
        },
        joint_names: traj.joint_names.clone(),
        points: traj
            .points
            .iter()
            .map(|p| JointTrajectoryPoint {
                positions: p.positions.clone(),
                velocities: p.velocities.clone(),
                accelerations: p.accelerations.clone(),
                effort: Vec::new(),
                time_from_start: duration(p.time_from_start),
            })
            .collect(),
    }
}

/// The PlanningStats message of a plan.
pub fn plan_stats_msg(plan: &ServicePlanResponse) -> PlanningStats {
    PlanningStats {
        ik_time: plan.ik.map_or(0.0, |ik| ik.time.as_secs_f64()),
        ..stats_msg(&plan.stats, &plan.backend, &plan.planner)
    }
}

/// "; the goal pose search was cut short by the time limit (its ik_time_share or the whole
/// limit; N starts)" for a pose goal whose inverse kinematics was cut short, else nothing.
pub fn ik_note(ik: Option<&PoseSearch>) -> String {
    match ik {
        Some(ik) if ik.cut => format!(
            "; the goal pose search was cut short by the time limit (its ik_time_share or the \
             whole limit; {} starts)",
            ik.starts_tried
        ),
        _ => String::new(),
    }
}

/// The PlanningStats message of a plan's statistics (`ik_time` 0).
pub fn stats_msg(stats: &PlanStats, backend: &str, planner_id: &str) -> PlanningStats {
    PlanningStats {
        planning_time: stats.planning_time.as_secs_f64(),
        simplification_time: stats.simplification_time.as_secs_f64(),
        collision_checks: stats.collision_checks,
        configurations_checked: stats.configs_checked,
        motions_checked: stats.motions_checked,
        path_length_before: stats.path_length_before,
        path_length_after: stats.path_length_after,
        roadmap_vertices: stats.roadmap_vertices as u64,
        roadmap_edges: stats.roadmap_edges as u64,
        backend: backend.to_string(),
        planner_id: planner_id.to_string(),
        iterations: stats.iterations as u64,
        device_time: stats.device_time.map_or(0.0, |d| d.as_secs_f64()),
        // A pose goal's search is the service's, not the planner's: see `plan_stats_msg`.
        ik_time: 0.0,
    }
}

/// "; 2 of 3 corners rounded" for a trajectory with rounded corners, else nothing.
pub fn corners_note(rounded: Option<(usize, usize)>) -> String {
    match rounded {
        Some((n, of)) if of > 0 => format!("; {n} of {of} corners rounded"),
        _ => String::new(),
    }
}

/// The PlanPath response of a plan's outcome; `request` names the planner asked for
/// (reported in the statistics of a failure).
pub fn response(
    outcome: &Result<ServicePlanResponse, ServiceError>,
    request: &ServicePlanRequest,
    service: &PlanningService,
) -> PlanPath::Response {
    let settings = service.settings();
    match outcome {
        Ok(plan) => PlanPath::Response {
            success: true,
            error_code: SUCCESS,
            message: format!(
                "{} waypoints, {} trajectory points, {:.3} s long, planned by {}{} in {:.3} s{}",
                plan.path.len(),
                plan.trajectory.points.len(),
                plan.trajectory.duration(),
                plan.planner,
                plan.planner_config
                    .as_ref()
                    .map(|c| format!(" (OMPL config {c})"))
                    .unwrap_or_default(),
                plan.stats.planning_time.as_secs_f64(),
                plan.pose_error
                    .as_ref()
                    .map(|(link, dp, dr)| format!(
                        "; '{link}' within {dp:.2e} m and {dr:.2e} rad of the goal pose"
                    ))
                    .unwrap_or_default()
            ) + &goal_note(plan.reached_goal, !request.other_goal_poses.is_empty())
                + &corners_note(plan.rounded_corners)
                + &speed_note(plan.link_speed.as_ref())
                + &ik_note(plan.ik.as_ref()),
            trajectory: joint_trajectory(&plan.trajectory, &settings.planning_frame),
            stats: plan_stats_msg(plan),
            reached_goal: i32::try_from(plan.reached_goal).unwrap_or(i32::MAX),
        },
        Err(e) => PlanPath::Response {
            success: false,
            error_code: error_code(e.category()),
            message: e.to_string(),
            stats: PlanningStats {
                backend: settings.backend.clone(),
                planner_id: request
                    .planner
                    .clone()
                    .unwrap_or_else(|| settings.planner.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    }
}

/// Which goal of a goal set a plan ends at, for a response's message ("" for the goal):
/// one of the other goal poses (`poses`) or of the other goal states.
pub fn goal_note(reached_goal: usize, poses: bool) -> String {
    other_goal_field(reached_goal, poses).map_or_else(String::new, |f| format!("; ends at {f}"))
}

/// The field and index of the other goal a plan ends at (`other_goal_poses[k]` with `poses`,
/// else `other_goal_states[k]`); `None` for the goal itself.
pub fn other_goal_field(reached_goal: usize, poses: bool) -> Option<String> {
    let field = if poses {
        "other_goal_poses"
    } else {
        "other_goal_states"
    };
    reached_goal.checked_sub(1).map(|k| format!("{field}[{k}]"))
}

/// The answer when no robot is loaded.
pub fn no_robot(reason: &str) -> PlanPath::Response {
    PlanPath::Response {
        success: false,
        error_code: FAILURE,
        message: format!("no robot loaded: {reason}"),
        ..Default::default()
    }
}

/// The service requests of a PlanBatch request (each problem read as a PlanPath request with
/// the shared options), or what is wrong with the request as a whole.
pub fn batch_requests(req: &PlanBatch::Request) -> Result<Vec<ServicePlanRequest>, String> {
    let goals = req.goal_states.len().max(req.goal_poses.len());
    if !req.goal_states.is_empty() && !req.goal_poses.is_empty() {
        return Err(format!(
            "goal_states has {} entries and goal_poses {}: give one of them",
            req.goal_states.len(),
            req.goal_poses.len()
        ));
    }
    if goals == 0 {
        return Err("goal_states and goal_poses are empty: give at least one goal".into());
    }
    if !req.start_states.is_empty() && req.start_states.len() != goals {
        return Err(format!(
            "start_states has {} entries but the goals (goal_states or goal_poses) {goals}: give \
             none (every problem starts from joint_states) or one per goal",
            req.start_states.len(),
        ));
    }
    if !req.other_goals.is_empty() && req.other_goals.len() != goals {
        return Err(format!(
            "other_goals has {} entries but the goals (goal_states or goal_poses) {goals}: give \
             none or one goal set per goal",
            req.other_goals.len(),
        ));
    }
    Ok((0..goals)
        .map(|i| {
            service_request(&PlanPath::Request {
                start_state: req.start_states.get(i).cloned().unwrap_or_default(),
                goal_state: req.goal_states.get(i).cloned().unwrap_or_default(),
                goal_name: String::new(),
                goal_pose: req.goal_poses.get(i).cloned().unwrap_or_default(),
                goal_link: req.goal_link.clone(),
                goal_position_only: req.goal_position_only,
                goal_position_tolerance: req.goal_position_tolerance,
                goal_orientation_tolerance: req.goal_orientation_tolerance,
                planner_id: req.planner_id.clone(),
                allowed_planning_time: req.allowed_planning_time,
                seed: req.seed,
                max_velocity_scaling_factor: req.max_velocity_scaling_factor,
                max_acceleration_scaling_factor: req.max_acceleration_scaling_factor,
                num_planning_attempts: req.num_planning_attempts,
                path_constraints: req.path_constraints.clone(),
                goal_constraints: Default::default(),
                group_name: req.group_name.clone(),
                cartesian_speed_limited_link: req.cartesian_speed_limited_link.clone(),
                max_cartesian_speed: req.max_cartesian_speed,
                other_goal_states: req
                    .other_goals
                    .get(i)
                    .map(|g| g.states.clone())
                    .unwrap_or_default(),
                other_goal_poses: req
                    .other_goals
                    .get(i)
                    .map(|g| g.poses.clone())
                    .unwrap_or_default(),
            })
        })
        .collect())
}

/// The PlanBatch response of the outcomes of `requests`: each problem's entries as its
/// PlanPath response would hold them.
pub fn batch_response(
    outcomes: &[Result<ServicePlanResponse, ServiceError>],
    requests: &[ServicePlanRequest],
    service: &PlanningService,
) -> PlanBatch::Response {
    let mut out = PlanBatch::Response::default();
    for (outcome, request) in outcomes.iter().zip(requests) {
        let one = response(outcome, request, service);
        out.error_codes.push(one.error_code);
        out.messages.push(one.message);
        out.trajectories.push(one.trajectory);
        out.stats.push(one.stats);
        out.reached_goals.push(one.reached_goal);
    }
    let solved = out.error_codes.iter().filter(|&&c| c == SUCCESS).count();
    out.solved = i32::try_from(solved).unwrap_or(i32::MAX);
    out.success = solved == outcomes.len() && !outcomes.is_empty();
    out.message = format!("{solved} of {} problems planned", outcomes.len());
    out
}

/// The PlanBatch answer to a request refused as a whole (`message` says why).
pub fn batch_refused(message: String) -> PlanBatch::Response {
    PlanBatch::Response {
        success: false,
        message,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::gpu_motion_planner_interfaces::msg::GoalSet;
    use r2r::sensor_msgs::msg::JointState;

    fn js(names: &[&str], pos: &[f64]) -> JointState {
        JointState {
            name: names.iter().map(|s| s.to_string()).collect(),
            position: pos.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn zero_fields_mean_the_parameters() {
        let req = PlanPath::Request {
            goal_state: js(&["a"], &[1.0]),
            seed: -1,
            ..Default::default()
        };
        let r = service_request(&req);
        assert_eq!(r.start, None);
        assert_eq!(r.planner, None);
        assert_eq!(r.time_limit, None);
        assert_eq!(r.seed, None);
        assert_eq!(r.vel_scale, None);
        assert_eq!(r.attempts, None);
        assert_eq!(r.speed_limit, None);
        let req = PlanPath::Request {
            start_state: js(&["a"], &[0.5]),
            goal_state: js(&["a"], &[1.0]),
            planner_id: "rrt".into(),
            allowed_planning_time: 2.0,
            seed: 3,
            max_velocity_scaling_factor: 0.5,
            num_planning_attempts: 4,
            max_cartesian_speed: 0.25,
            ..Default::default()
        };
        let r = service_request(&req);
        assert_eq!(
            r.speed_limit,
            Some(SpeedLimit {
                link: None,
                max_speed: 0.25
            })
        );
        assert_eq!(r.attempts, Some(4));
        assert_eq!(r.start, Some((vec!["a".to_string()], vec![0.5])));
        assert_eq!(r.planner.as_deref(), Some("rrt"));
        assert_eq!(r.time_limit, Some(2.0));
        assert_eq!(r.seed, Some(3));
        assert_eq!(r.vel_scale, Some(0.5));
    }

    #[test]
    fn durations_split_into_seconds_and_nanoseconds() {
        let d = duration(1.25);
        assert_eq!((d.sec, d.nanosec), (1, 250_000_000));
        let d = duration(f64::NAN);
        assert_eq!((d.sec, d.nanosec), (0, 0));
        let d = duration(-3.0);
        assert_eq!((d.sec, d.nanosec), (0, 0));
    }

    #[test]
    fn plans_on_the_bundled_robot() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut service =
            PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        let names = service.group().expect("group").space.names.clone();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let req = PlanPath::Request {
            start_state: js(&names, &[-2.8, 0.3, 0.8, 0.0, 0.0, 0.0]),
            goal_state: js(&names, &[-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]),
            seed: -1,
            ..Default::default()
        };
        let sreq = service_request(&req);
        let outcome = service.plan(sreq.clone());
        let res = response(&outcome, &sreq, &service);
        assert!(res.success, "{}", res.message);
        assert_eq!(res.error_code, SUCCESS);
        assert!(res.stats.planning_time > 0.0);
        assert_eq!(res.stats.device_time, 0.0, "planned on the CPU");
        assert_eq!(res.trajectory.joint_names.len(), 6);
        let mut bad = req.clone();
        bad.goal_state.name[0] = "nope".into();
        let sreq = service_request(&bad);
        let outcome = service.plan(sreq.clone());
        let res = response(&outcome, &sreq, &service);
        assert!(!res.success);
        assert_eq!(res.error_code, INVALID_GOAL_CONSTRAINTS);
        assert!(res.message.contains("nope"));

        // A goal set: the goal in collision (the upper arm through the table), the other
        // goal reached and named; a bad other goal refused naming its index.
        let mut set = req.clone();
        set.goal_state.position = vec![0.0, 2.0, 0.0, 0.0, 0.0, 0.0];
        set.other_goal_states = vec![req.goal_state.clone()];
        let sreq = service_request(&set);
        assert_eq!(
            sreq.other_goals,
            vec![(req.goal_state.name.clone(), req.goal_state.position.clone())]
        );
        let outcome = service.plan(sreq.clone());
        let res = response(&outcome, &sreq, &service);
        assert!(res.success, "{}", res.message);
        assert_eq!(res.reached_goal, 1);
        assert!(
            res.message.contains("ends at other_goal_states[0]"),
            "{}",
            res.message
        );
        set.other_goal_states[0].position.pop();
        let sreq = service_request(&set);
        let outcome = service.plan(sreq.clone());
        let res = response(&outcome, &sreq, &service);
        assert_eq!(res.error_code, INVALID_GOAL_CONSTRAINTS);
        assert!(
            res.message.contains("other_goal_states[0]"),
            "{}",
            res.message
        );
    }

    #[test]
    fn a_batch_answers_each_problem_and_refuses_bad_lists() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut service =
            PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        let names = service.group().expect("group").space.names.clone();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let start = js(&names, &[-2.8, 0.3, 0.8, 0.0, 0.0, 0.0]);
        let req = PlanBatch::Request {
            start_states: vec![start.clone(), start.clone()],
            goal_states: vec![
                js(&names, &[-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]),
                // Shoulder lifted 2 rad: the upper arm goes down through the table.
                js(&names, &[0.0, 2.0, 0.0, 0.0, 0.0, 0.0]),
            ],
            seed: -1,
            ..Default::default()
        };
        let requests = batch_requests(&req).expect("requests");
        assert_eq!(requests.len(), 2);
        // The batch's path constraints reach every problem.
        let mut constrained = req.clone();
        constrained
            .path_constraints
            .orientation_constraints
            .push(Default::default());
        let each = batch_requests(&constrained).expect("requests");
        assert!(each
            .iter()
            .all(|r| r.path_constraints.orientation.len() == 1));
        let outcomes = service.plan_batch(&requests);
        let res = batch_response(&outcomes, &requests, &service);
        assert!(!res.success);
        assert_eq!(res.solved, 1);
        assert_eq!(res.error_codes, vec![SUCCESS, GOAL_IN_COLLISION]);
        assert_eq!(res.trajectories[0].joint_names.len(), 6);
        assert!(res.trajectories[1].points.is_empty());
        assert!(res.messages[1].contains("collision"), "{}", res.messages[1]);
        assert_eq!(res.stats.len(), 2);
        // The same trajectory as ~/plan for the first problem.
        let one = PlanPath::Request {
            start_state: start.clone(),
            goal_state: req.goal_states[0].clone(),
            seed: -1,
            ..Default::default()
        };
        let sreq = service_request(&one);
        let alone = response(&service.plan(sreq.clone()), &sreq, &service);
        assert_eq!(alone.trajectory, res.trajectories[0]);
        // Lists that do not fit.
        let e = batch_requests(&PlanBatch::Request {
            start_states: vec![start],
            goal_states: req.goal_states.clone(),
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            e.contains("start_states") && e.contains("goal_states"),
            "{e}"
        );
        let e = batch_requests(&PlanBatch::Request::default()).unwrap_err();
        assert!(e.contains("goal_states"), "{e}");

        // Goal sets: the second problem's goal in collision, a free one among its other
        // goals; it ends there and says so, the first keeps its goal alone.
        let free = js(&names, &[-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]);
        let sets = PlanBatch::Request {
            other_goals: vec![
                GoalSet::default(),
                GoalSet {
                    states: vec![free.clone()],
                    poses: Vec::new(),
                },
            ],
            ..req.clone()
        };
        let requests = batch_requests(&sets).expect("requests");
        assert_eq!(requests[1].other_goals.len(), 1);
        let outcomes = service.plan_batch(&requests);
        let res = batch_response(&outcomes, &requests, &service);
        assert!(res.success, "{:?}", res.messages);
        assert_eq!(res.reached_goals, vec![0, 1]);
        assert!(
            res.messages[1].contains("ends at other_goal_states[0]"),
            "{}",
            res.messages[1]
        );
        let last = res.trajectories[1].points.last().expect("points");
        assert_eq!(last.positions, free.position);
        let e = batch_requests(&PlanBatch::Request {
            other_goals: vec![GoalSet::default()],
            ..req
        })
        .unwrap_err();
        assert!(e.contains("other_goals has 1 entries"), "{e}");
    }

    #[test]
    fn path_constraints_keep_their_frames_links_and_numbers() {
        use r2r::gpu_motion_planner_interfaces::msg::{
            JointConstraint, OrientationConstraint, PositionConstraint,
        };
        let mut oc = OrientationConstraint {
            link_name: "tool0".into(),
            absolute_x_axis_tolerance: 0.1,
            absolute_y_axis_tolerance: 0.2,
            absolute_z_axis_tolerance: 3.2,
            parameterization: OrientationConstraint::ROTATION_VECTOR as u8,
            ..Default::default()
        };
        oc.header.frame_id = "camera".into();
        oc.orientation.x = 1.0;
        oc.orientation.w = 0.0;
        let mut pc = PositionConstraint {
            link_name: "wrist_2_link".into(),
            ..Default::default()
        };
        pc.target_point_offset.z = 0.05;
        pc.region_pose.position.z = 0.4;
        pc.region_pose.orientation.w = 1.0;
        pc.region_size.x = 1.0;
        pc.region_size.y = 2.0;
        pc.region_size.z = 0.5;
        let req = PlanPath::Request {
            path_constraints: PathConstraints {
                name: "interim".into(),
                orientation_constraints: vec![oc],
                position_constraints: vec![pc],
                joint_constraints: vec![JointConstraint {
                    joint_name: "wrist_3_joint".into(),
                    position: 0.5,
                    tolerance_above: 0.25,
                    tolerance_below: 0.75,
                }],
            },
            ..Default::default()
        };
        let spec = service_request(&req).path_constraints;
        assert_eq!(spec.name, "interim");
        let o = &spec.orientation[0];
        assert_eq!((o.frame.as_str(), o.link.as_str()), ("camera", "tool0"));
        assert_eq!(
            (o.orientation, o.tolerance),
            ([1.0, 0.0, 0.0, 0.0], [0.1, 0.2, 3.2])
        );
        assert_eq!(o.parameterization, 1);
        let p = &spec.position[0];
        assert_eq!((p.frame.as_str(), p.link.as_str()), ("", "wrist_2_link"));
        assert_eq!((p.offset, p.position), ([0.0, 0.0, 0.05], [0.0, 0.0, 0.4]));
        assert_eq!(
            (p.orientation, p.size),
            ([0.0, 0.0, 0.0, 1.0], [1.0, 2.0, 0.5])
        );
        let j = &spec.joint[0];
        assert_eq!(
            (j.joint.as_str(), j.position, j.below, j.above),
            ("wrist_3_joint", 0.5, 0.75, 0.25)
        );
        // No constraint in the message: none in the request.
        assert!(service_request(&PlanPath::Request::default())
            .path_constraints
            .is_empty());
    }

    #[test]
    fn a_batch_of_goal_poses_plans_each_to_its_pose() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut service =
            PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        let names = service.group().expect("group").space.names.clone();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let pose = |x: f64, y: f64, z: f64| {
            let mut p = r2r::geometry_msgs::msg::PoseStamped::default();
            p.header.frame_id = "world".into();
            p.pose.position.x = x;
            p.pose.position.y = y;
            p.pose.position.z = z;
            p.pose.orientation.x = 1.0;
            p.pose.orientation.w = 0.0;
            p
        };
        let req = PlanBatch::Request {
            start_states: vec![js(&names, &[-0.2, 0.3, 2.3, 0.0, -0.5, 0.0]); 2],
            goal_poses: vec![pose(0.3, -0.45, 0.35), pose(5.0, 0.0, 0.5)],
            seed: -1,
            ..Default::default()
        };
        let requests = batch_requests(&req).expect("requests");
        assert!(requests.iter().all(|r| r.goal_pose.is_some()));
        let outcomes = service.plan_batch(&requests);
        let res = batch_response(&outcomes, &requests, &service);
        assert_eq!(res.error_codes, vec![SUCCESS, NO_IK_SOLUTION]);
        assert!(
            res.messages[0].contains("'tool0' within"),
            "{}",
            res.messages[0]
        );
        // Goal states and goal poses together are refused.
        let e = batch_requests(&PlanBatch::Request {
            goal_states: vec![js(&names, &[0.0; 6])],
            ..req
        })
        .unwrap_err();
        assert!(e.contains("give one of them"), "{e}");
    }
}
