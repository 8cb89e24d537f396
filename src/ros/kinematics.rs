//! `~/compute_ik` (ComputeIk) and `~/compute_fk` (ComputeFk): requests →
//! [`PlanningService::compute_ik`] / [`PlanningService::compute_fk`], and the answers.

use r2r::geometry_msgs::msg::PoseStamped;
use r2r::gpu_motion_planner_interfaces::srv::{ComputeFk, ComputeIk};
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::Header;

use super::markers::pose_msg;
use super::plan::error_code;
use crate::service::{IkRequest, PlanningService, ServicePoseGoal};

const SUCCESS: i32 = 1;

/// Names and positions of a joint state; `None` when it names no joint.
fn named(state: &JointState) -> Option<(Vec<String>, Vec<f64>)> {
    (!state.name.is_empty()).then(|| (state.name.clone(), state.position.clone()))
}

/// The service request of a ComputeIk request: zero tolerances, attempts and timeout and a
/// negative seed mean the defaults.
pub fn ik_request(req: &ComputeIk::Request) -> IkRequest {
    let nonzero = |x: f64| (x != 0.0).then_some(x);
    let (p, o) = (&req.pose.pose.position, &req.pose.pose.orientation);
    IkRequest {
        seed_state: named(&req.seed_state),
        goal: ServicePoseGoal {
            frame: req.pose.header.frame_id.clone(),
            link: (!req.link_name.is_empty()).then(|| req.link_name.clone()),
            position: [p.x, p.y, p.z],
            orientation: (!req.position_only).then_some([o.x, o.y, o.z, o.w]),
            position_tolerance: nonzero(req.position_tolerance),
            orientation_tolerance: nonzero(req.orientation_tolerance),
        },
        avoid_collisions: req.avoid_collisions,
        attempts: (req.attempts != 0).then_some(i64::from(req.attempts)),
        seed: u64::try_from(req.seed).ok(),
        group: (!req.group_name.is_empty()).then(|| req.group_name.clone()),
        timeout: (req.timeout != 0.0).then_some(req.timeout),
    }
}

/// Answers a ComputeIk request on `service`.
pub fn compute_ik(service: &mut PlanningService, req: &ComputeIk::Request) -> ComputeIk::Response {
    match service.compute_ik(&ik_request(req)) {
        Ok(answer) => {
            let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
            ComputeIk::Response {
                success: true,
                error_code: SUCCESS,
                message: format!(
                    "'{}' placed within {:.2e} m and {:.2e} rad ({} distinct solutions found{})",
                    answer.link,
                    answer.errors.0,
                    answer.errors.1,
                    answer.found.0,
                    if req.avoid_collisions {
                        format!(", {} in collision", answer.found.1)
                    } else {
                        String::new()
                    }
                ),
                solution: JointState {
                    name: answer.joint_names,
                    position: answer.positions,
                    ..Default::default()
                },
                link_name: answer.link,
                position_error: answer.errors.0,
                orientation_error: answer.errors.1,
                solutions_found: count(answer.found.0),
                solutions_in_collision: count(answer.found.1),
            }
        }
        Err(e) => ComputeIk::Response {
            success: false,
            error_code: error_code(e.category()),
            message: e.to_string(),
            ..Default::default()
        },
    }
}

/// Answers a ComputeFk request on `service`; the poses are stamped with the request's frame
/// (the planning frame when empty).
pub fn compute_fk(service: &PlanningService, req: &ComputeFk::Request) -> ComputeFk::Response {
    match service.compute_fk(&named(&req.state), &req.link_names, &req.header.frame_id) {
        Ok(poses) => {
            let frame_id = if req.header.frame_id.is_empty() {
                service.settings().planning_frame.clone()
            } else {
                req.header.frame_id.clone()
            };
            let header = Header {
                stamp: req.header.stamp.clone(),
                frame_id,
            };
            ComputeFk::Response {
                success: true,
                message: format!("{} link poses in '{}'", poses.len(), header.frame_id),
                link_names: poses.iter().map(|(n, _)| n.clone()).collect(),
                poses: poses
                    .iter()
                    .map(|(_, p)| PoseStamped {
                        header: header.clone(),
                        pose: pose_msg(p),
                    })
                    .collect(),
            }
        }
        Err(e) => ComputeFk::Response {
            success: false,
            message: e.to_string(),
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ik_of_an_fk_pose_reaches_it_and_bad_requests_are_named() {
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled");
        let mut s = PlanningService::new(robot, scene, crate::service::ServiceSettings::default());
        let names = s.group().expect("group").space.names;
        let q = vec![0.4, -1.0, 1.3, -0.6, -1.2, 0.3];
        let state = JointState {
            name: names.clone(),
            position: q.clone(),
            ..Default::default()
        };
        let fk = compute_fk(
            &s,
            &ComputeFk::Request {
                state: state.clone(),
                link_names: vec!["tool0".into()],
                ..Default::default()
            },
        );
        assert!(fk.success, "{}", fk.message);
        assert_eq!(fk.link_names, vec!["tool0".to_string()]);
        assert_eq!(fk.poses[0].header.frame_id, "world");
        let mut req = ComputeIk::Request {
            pose: fk.poses[0].clone(),
            seed_state: JointState {
                name: names.clone(),
                position: vec![0.0; 6],
                ..Default::default()
            },
            avoid_collisions: true,
            ..Default::default()
        };
        let ik = compute_ik(&mut s, &req);
        assert!(ik.success, "{}", ik.message);
        assert_eq!(ik.solution.name, names);
        assert!(ik.position_error <= 1e-4 && ik.orientation_error <= 1e-3);
        // The solution's tool pose is the asked one.
        let back = compute_fk(
            &s,
            &ComputeFk::Request {
                state: ik.solution.clone(),
                link_names: vec!["tool0".into()],
                ..Default::default()
            },
        );
        let (a, b) = (&back.poses[0].pose.position, &fk.poses[0].pose.position);
        assert!((a.x - b.x).abs() + (a.y - b.y).abs() + (a.z - b.z).abs() < 3e-4);
        // Out of reach: NO_IK_SOLUTION.
        req.pose.pose.position.z = 5.0;
        let ik = compute_ik(&mut s, &req);
        assert!(
            !ik.success && ik.error_code == -31,
            "{} {}",
            ik.error_code,
            ik.message
        );
        req.link_name = "gripper".into();
        let ik = compute_ik(&mut s, &req);
        assert!(
            !ik.success && ik.message.contains("gripper"),
            "{}",
            ik.message
        );
        let fk = compute_fk(
            &s,
            &ComputeFk::Request {
                state,
                link_names: vec!["nowhere".into()],
                ..Default::default()
            },
        );
        assert!(
            !fk.success && fk.message.contains("nowhere"),
            "{}",
            fk.message
        );
    }
}
