//! `~/plan_sequence` (PlanSequence): several motions planned one after another and joined
//! ([`crate::service::sequence`]); the joined trajectory is published as `~/plan` publishes
//! its plans, and becomes the plan `~/execute` sends.

use r2r::gpu_motion_planner_interfaces::msg::PlanningStats;
use r2r::gpu_motion_planner_interfaces::srv::{PlanPath, PlanSequence};

use super::plan::{error_code, joint_trajectory, service_request, stats_msg, SUCCESS};
use crate::service::sequence::ServiceSequenceResponse;
use crate::service::{PlanningService, ServiceError, ServicePlanRequest};

/// The service requests of a PlanSequence request: each item read as a PlanPath request (the
/// sequence's start for the first, its group, time budget and seed for all). Errors name the
/// item whose blend radius is not 0.
pub fn sequence_requests(req: &PlanSequence::Request) -> Result<Vec<ServicePlanRequest>, String> {
    req.items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if item.blend_radius != 0.0 {
                return Err(format!(
                    "item {i}: blend_radius {} is not planned: give 0 (the robot stops at the \
                     end of each motion)",
                    item.blend_radius
                ));
            }
            Ok(service_request(&PlanPath::Request {
                start_state: if i == 0 {
                    req.start_state.clone()
                } else {
                    Default::default()
                },
                goal_state: item.goal_state.clone(),
                goal_name: item.goal_name.clone(),
                goal_pose: item.goal_pose.clone(),
                goal_link: item.goal_link.clone(),
                goal_position_only: item.goal_position_only,
                goal_position_tolerance: item.goal_position_tolerance,
                goal_orientation_tolerance: item.goal_orientation_tolerance,
                planner_id: item.planner_id.clone(),
                allowed_planning_time: req.allowed_planning_time,
                seed: req.seed,
                max_velocity_scaling_factor: item.max_velocity_scaling_factor,
                max_acceleration_scaling_factor: item.max_acceleration_scaling_factor,
                num_planning_attempts: 0,
                path_constraints: item.path_constraints.clone(),
                group_name: req.group_name.clone(),
                cartesian_speed_limited_link: item.cartesian_speed_limited_link.clone(),
                max_cartesian_speed: item.max_cartesian_speed,
            }))
        })
        .collect()
}

/// The PlanSequence response of a sequence's outcome.
pub fn sequence_response(
    outcome: &Result<ServiceSequenceResponse, ServiceError>,
    service: &PlanningService,
) -> PlanSequence::Response {
    let frame = &service.settings().planning_frame;
    match outcome {
        Ok(seq) => PlanSequence::Response {
            success: true,
            error_code: SUCCESS,
            message: format!(
                "{} motions ({}), {} trajectory points, {:.3} s long",
                seq.items.len(),
                seq.items
                    .iter()
                    .map(|p| p.planner.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                seq.trajectory.points.len(),
                seq.trajectory.duration()
            ),
            trajectory: joint_trajectory(&seq.trajectory, frame),
            item_ends: seq.item_ends.iter().map(|&i| i as u32).collect(),
            stats: seq
                .items
                .iter()
                .map(|p| stats_msg(&p.stats, &p.backend, &p.planner))
                .collect::<Vec<PlanningStats>>(),
        },
        Err(e) => sequence_refused(error_code(e.category()), e.to_string()),
    }
}

/// The PlanSequence answer of a refused or failed sequence.
pub fn sequence_refused(error_code: i32, message: String) -> PlanSequence::Response {
    PlanSequence::Response {
        success: false,
        error_code,
        message,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::gpu_motion_planner_interfaces::msg::MotionSequenceItem;

    #[test]
    fn items_read_as_plan_requests_the_first_from_the_start_state() {
        let mut req = PlanSequence::Request {
            group_name: "arm".into(),
            seed: 3,
            ..Default::default()
        };
        req.start_state.name = vec!["shoulder_pan_joint".into()];
        req.start_state.position = vec![0.5];
        let item = |planner: &str| MotionSequenceItem {
            goal_name: "home".into(),
            planner_id: planner.into(),
            ..Default::default()
        };
        req.items = vec![item("PTP"), item("LIN")];
        let reqs = sequence_requests(&req).unwrap();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            reqs[0].start,
            Some((vec!["shoulder_pan_joint".to_string()], vec![0.5]))
        );
        assert_eq!(reqs[1].start, None);
        assert_eq!(reqs[1].planner.as_deref(), Some("LIN"));
        assert_eq!(reqs[1].group.as_deref(), Some("arm"));
        assert_eq!(
            (reqs[1].seed, reqs[1].goal_name.as_deref()),
            (Some(3), Some("home"))
        );
        req.items[1].blend_radius = 0.1;
        let e = sequence_requests(&req).unwrap_err();
        assert!(e.starts_with("item 1: blend_radius 0.1"), "{e}");
    }
}
