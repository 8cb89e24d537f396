//! `~/plan_sequence` (PlanSequence): several motions planned one after another and joined
//! ([`crate::service::sequence`]); the joined trajectory is published as `~/plan` publishes
//! its plans, and becomes the plan `~/execute` sends.

use r2r::gpu_motion_planner_interfaces::msg::PlanningStats;
use r2r::gpu_motion_planner_interfaces::srv::{PlanPath, PlanSequence};

use super::plan::{error_code, joint_trajectory, plan_stats_msg, service_request, SUCCESS};
use crate::service::sequence::{ServiceSequenceItem, ServiceSequenceResponse};
use crate::service::{PlanningService, ServiceError};

/// The service items of a PlanSequence request: each item read as a PlanPath request (the
/// sequence's start for the first, its group, time budget and seed for all) with its blend
/// radius (checked by the service).
pub fn sequence_requests(req: &PlanSequence::Request) -> Vec<ServiceSequenceItem> {
    req.items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let request = service_request(&PlanPath::Request {
                start_state: if i == 0 {
                    req.start_state.clone()
                } else {
                    Default::default()
                },
                goal_state: item.goal_state.clone(),
                goal_name: item.goal_name.clone(),
                // A goal set: the next item starts where this one ends.
                other_goal_states: item.other_goal_states.clone(),
                other_goal_poses: item.other_goal_poses.clone(),
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
                goal_constraints: Default::default(),
                group_name: req.group_name.clone(),
                cartesian_speed_limited_link: item.cartesian_speed_limited_link.clone(),
                max_cartesian_speed: item.max_cartesian_speed,
            });
            ServiceSequenceItem {
                request,
                blend_radius: item.blend_radius,
            }
        })
        .collect()
}

/// The PlanSequence response of a sequence's outcome for `items`.
pub fn sequence_response(
    outcome: &Result<ServiceSequenceResponse, ServiceError>,
    items: &[ServiceSequenceItem],
    service: &PlanningService,
) -> PlanSequence::Response {
    let frame = &service.settings().planning_frame;
    match outcome {
        Ok(seq) => PlanSequence::Response {
            success: true,
            error_code: SUCCESS,
            message: format!(
                "{} motions ({}){}{}, {} trajectory points, {:.3} s long",
                seq.items.len(),
                seq.items
                    .iter()
                    .map(|p| p.planner.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                goals_text(&seq.items, items),
                blends_text(&seq.blends),
                seq.trajectory.points.len(),
                seq.trajectory.duration()
            ),
            trajectory: joint_trajectory(&seq.trajectory, frame),
            item_ends: seq.item_ends.iter().map(|&i| i as u32).collect(),
            stats: seq
                .items
                .iter()
                .map(plan_stats_msg)
                .collect::<Vec<PlanningStats>>(),
            reached_goals: seq
                .items
                .iter()
                .map(|p| i32::try_from(p.reached_goal).unwrap_or(i32::MAX))
                .collect(),
        },
        Err(e) => sequence_refused(error_code(e.category()), e.to_string()),
    }
}

/// Which motions ended at one of their other goal states or poses (`asked`: the items),
/// for the response message ("" when every motion ended at its goal).
fn goals_text(
    planned: &[crate::service::ServicePlanResponse],
    asked: &[ServiceSequenceItem],
) -> String {
    let each: Vec<String> = planned
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let poses = asked
                .get(i)
                .is_some_and(|a| !a.request.other_goal_poses.is_empty());
            super::plan::other_goal_field(p.reached_goal, poses)
                .map(|field| format!("item {i} ends at {field}"))
        })
        .collect();
    if each.is_empty() {
        String::new()
    } else {
        format!(", {}", each.join(", "))
    }
}

/// How the blends went, for the response message ("" without blends).
fn blends_text(blends: &[crate::trajectory::blend::BlendReport]) -> String {
    if blends.is_empty() {
        return String::new();
    }
    let each: Vec<String> = blends
        .iter()
        .map(|b| {
            format!(
                "after item {} within {} m ({}, {:.3} s, {:.3} s saved)",
                b.motion,
                b.radius,
                match b.kind {
                    crate::trajectory::blend::BlendKind::Overlap => "overlap",
                    crate::trajectory::blend::BlendKind::Curve => "curve",
                },
                b.duration,
                b.saved
            )
        })
        .collect();
    format!(", blended {}", each.join("; "))
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
        req.items[0].blend_radius = 0.05;
        let items = sequence_requests(&req);
        assert_eq!(items.len(), 2);
        let reqs: Vec<_> = items.iter().map(|i| &i.request).collect();
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
        assert_eq!((items[0].blend_radius, items[1].blend_radius), (0.05, 0.0));
        assert!(reqs[0].other_goals.is_empty());
        // An item's other goal states make its goal set.
        let other = r2r::sensor_msgs::msg::JointState {
            name: vec!["shoulder_pan_joint".into()],
            position: vec![1.0],
            ..Default::default()
        };
        req.items[1].other_goal_states = vec![other];
        let items = sequence_requests(&req);
        assert_eq!(
            items[1].request.other_goals,
            vec![(vec!["shoulder_pan_joint".to_string()], vec![1.0])]
        );
        assert!(items[0].request.other_goals.is_empty());
        // And its other goal poses, its set of poses.
        let mut pose = r2r::geometry_msgs::msg::PoseStamped::default();
        pose.header.frame_id = "world".into();
        pose.pose.position.x = 0.4;
        req.items[0].goal_pose = pose.clone();
        req.items[0].other_goal_poses = vec![pose];
        let items = sequence_requests(&req);
        let others = &items[0].request.other_goal_poses;
        assert_eq!(others.len(), 1);
        assert_eq!(
            (others[0].frame.as_str(), others[0].position),
            ("world", [0.4, 0.0, 0.0])
        );
        assert!(items[1].request.other_goal_poses.is_empty());
        // The message names the field of the goal reached.
        assert_eq!(
            super::super::plan::goal_note(2, true),
            "; ends at other_goal_poses[1]"
        );
        assert_eq!(
            super::super::plan::goal_note(1, false),
            "; ends at other_goal_states[0]"
        );
        assert_eq!(super::super::plan::goal_note(0, true), "");
        assert_eq!(
            super::super::plan::other_goal_field(3, false).as_deref(),
            Some("other_goal_states[2]")
        );
        assert_eq!(super::super::plan::other_goal_field(0, false), None);
    }
}
