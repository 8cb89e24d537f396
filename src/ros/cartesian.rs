//! `~/plan_cartesian` (PlanCartesian): request → [`ServiceCartesianRequest`],
//! [`PlanningService::plan_cartesian`], and the answer (trajectory, fraction, stop reason,
//! error code and message).

use r2r::gpu_motion_planner_interfaces::srv::PlanCartesian;

use super::plan::{error_code, joint_trajectory};
use crate::service::{
    PlanningService, ServiceCartesianRequest, ServiceCartesianResponse, ServiceError,
};

const SUCCESS: i32 = PlanCartesian::Response::SUCCESS as i32;
const FAILURE: i32 = PlanCartesian::Response::FAILURE as i32;

/// The service request of a PlanCartesian request. Empty `start_state.name` means the current
/// joint state, an empty `link_name` the group's tip, and zero `max_step`, `jump_threshold`
/// and scaling factors the defaults (0.01 m, off, the node's parameters).
pub fn cartesian_request(req: &PlanCartesian::Request) -> ServiceCartesianRequest {
    let nonzero = |x: f64| if x == 0.0 { None } else { Some(x) };
    ServiceCartesianRequest {
        start: (!req.start_state.name.is_empty()).then(|| {
            (
                req.start_state.name.clone(),
                req.start_state.position.clone(),
            )
        }),
        frame: req.header.frame_id.clone(),
        link: (!req.link_name.is_empty()).then(|| req.link_name.clone()),
        waypoints: req
            .waypoints
            .iter()
            .map(|p| {
                let (t, o) = (&p.position, &p.orientation);
                ([t.x, t.y, t.z], [o.x, o.y, o.z, o.w])
            })
            .collect(),
        max_step: nonzero(req.max_step),
        jump_threshold: nonzero(req.jump_threshold),
        vel_scale: nonzero(req.max_velocity_scaling_factor),
        acc_scale: nonzero(req.max_acceleration_scaling_factor),
        group: (!req.group_name.is_empty()).then(|| req.group_name.clone()),
        speed_limit: super::plan::speed_limit(
            &req.cartesian_speed_limited_link,
            req.max_cartesian_speed,
        ),
    }
}

/// The PlanCartesian response of an outcome.
pub fn cartesian_response(
    outcome: &Result<ServiceCartesianResponse, ServiceError>,
    service: &PlanningService,
) -> PlanCartesian::Response {
    let settings = service.settings();
    match outcome {
        Ok(out) => {
            let s = &out.stats;
            let time = s.ik_time + s.check_time + s.timing_time;
            PlanCartesian::Response {
                success: true,
                error_code: SUCCESS,
                message: format!(
                    "'{}' moved {:.1} % of the path ({} of {} steps), {} trajectory points, \
                     {:.3} s long{}",
                    out.link,
                    100.0 * out.fraction,
                    out.steps.1,
                    out.steps.0,
                    out.trajectory.points.len(),
                    out.trajectory.duration(),
                    out.stop
                        .as_ref()
                        .map(|r| format!("; stopped at {r}"))
                        .unwrap_or_default()
                ) + &super::plan::speed_note(out.link_speed.as_ref()),
                fraction: out.fraction,
                stop_reason: out.stop.clone().unwrap_or_default(),
                trajectory: joint_trajectory(&out.trajectory, &settings.planning_frame),
                planning_time: time.as_secs_f64(),
                collision_checks: s.collision_checks,
                backend: out.backend.clone(),
            }
        }
        Err(e) => PlanCartesian::Response {
            success: false,
            error_code: error_code(e.category()),
            message: e.to_string(),
            backend: settings.backend.clone(),
            ..Default::default()
        },
    }
}

/// The answer when no robot is loaded.
pub fn cartesian_no_robot(reason: &str) -> PlanCartesian::Response {
    PlanCartesian::Response {
        success: false,
        error_code: FAILURE,
        message: format!("no robot loaded: {reason}"),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::geometry_msgs::msg::Pose;
    use r2r::sensor_msgs::msg::JointState;

    #[test]
    fn a_line_of_the_tool_is_answered_with_its_fraction() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut service =
            PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        let group = service.group().expect("group");
        let start = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
        let state = group.full_state(&service.robot().tree.neutral_state(), &start);
        let tool = service.robot().tree.link("tool0").expect("tool0");
        let from = service.robot().tree.forward_kinematics(&state)[tool];
        let mut pose = Pose::default();
        pose.position.x = from.translation.x;
        pose.position.y = from.translation.y;
        pose.position.z = from.translation.z - 0.1;
        let r = from.rotation.coords;
        (pose.orientation.x, pose.orientation.y) = (r.x, r.y);
        (pose.orientation.z, pose.orientation.w) = (r.z, r.w);
        let mut req = PlanCartesian::Request {
            start_state: JointState {
                name: group.space.names.clone(),
                position: start.to_vec(),
                ..Default::default()
            },
            waypoints: vec![pose],
            ..Default::default()
        };
        req.header.frame_id = "world".into();
        let sreq = cartesian_request(&req);
        assert_eq!(sreq.max_step, None);
        assert_eq!(sreq.link, None);
        let res = cartesian_response(&service.plan_cartesian(sreq), &service);
        assert!(res.success, "{}", res.message);
        assert_eq!(res.error_code, SUCCESS);
        assert_eq!(res.fraction, 1.0);
        assert!(res.stop_reason.is_empty());
        assert_eq!(res.trajectory.joint_names.len(), 6);
        assert!(res.trajectory.points.len() >= 11);
        assert!(res.collision_checks > 0);
        // An unknown frame is refused naming it.
        req.header.frame_id = "camera".into();
        let res = cartesian_response(&service.plan_cartesian(cartesian_request(&req)), &service);
        assert!(!res.success);
        assert_eq!(
            res.error_code,
            PlanCartesian::Response::INVALID_GOAL_CONSTRAINTS as i32
        );
        assert!(res.message.contains("camera"), "{}", res.message);
    }
}
