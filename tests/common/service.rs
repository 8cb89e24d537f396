//! `PlanningService` on the bundled robot and scene (`cli::demo::bundled`), no ROS: the service
//! the service tests plan with, requests by joint name, and the tool pose and a CPU checker
//! of the service's current robot and scene.

use gpu_motion_planner::cli::demo::bundled;
use gpu_motion_planner::collision::{CheckerOptions, CpuChecker};
use gpu_motion_planner::service::{PlanningService, ServicePlanRequest, ServiceSettings};
use nalgebra::Isometry3;

/// A start and goal in the bundled scene whose straight line is free.
pub const START: [f64; 6] = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
pub const GOAL: [f64; 6] = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];

/// The service on the bundled robot and scene: a 10 s time limit, seed 7.
pub fn service() -> PlanningService {
    let (robot, scene) = bundled().expect("bundled robot");
    let settings = ServiceSettings {
        time_limit: 10.0,
        seed: 7,
        ..ServiceSettings::default()
    };
    PlanningService::new(robot, scene, settings)
}

/// The joint names of the service's planning group.
pub fn names(s: &PlanningService) -> Vec<String> {
    s.group().expect("group").space.names.clone()
}

/// A request from `start` to `goal`, both group configurations named by [`names`].
pub fn request(s: &PlanningService, start: &[f64], goal: &[f64]) -> ServicePlanRequest {
    ServicePlanRequest {
        start: Some((names(s), start.to_vec())),
        goal: (names(s), goal.to_vec()),
        ..Default::default()
    }
}

/// Pose of `tool0` at group configuration `q` (other joints neutral).
pub fn tool_pose_at(s: &PlanningService, q: &[f64]) -> Isometry3<f64> {
    let robot = s.robot();
    let group = s.group().expect("group");
    let state = group.full_state(&robot.tree.neutral_state(), q);
    let tool = robot.tree.link("tool0").expect("tool0");
    robot.tree.forward_kinematics(&state)[tool]
}

/// A fresh CPU checker of the service's current robot (attached objects included) and scene,
/// other joints neutral: the independent re-check of what the service answers.
pub fn cpu_checker(s: &PlanningService) -> CpuChecker {
    let robot = s.robot();
    let group = s.group().expect("group");
    let base = robot.tree.neutral_state();
    CpuChecker::new(robot, &group, &base, s.scene(), CheckerOptions::default()).expect("checker")
}

/// Adds obstacle `ns/id` to the service's scene: a `kind` marker of size `size` (m, every
/// axis) centred at `at` in the planning frame.
pub fn place(
    s: &mut PlanningService,
    ns: &str,
    id: i32,
    kind: gpu_motion_planner::service::MarkerKind,
    at: nalgebra::Vector3<f64>,
    size: f64,
) {
    s.apply_marker(gpu_motion_planner::service::MarkerUpdate {
        ns: ns.into(),
        id,
        action: gpu_motion_planner::service::MarkerAction::Add,
        kind,
        frame_id: "world".into(),
        pose: Isometry3::translation(at.x, at.y, at.z),
        scale: [size; 3],
    })
    .expect("marker");
}

/// Picks obstacle `id` of the scene up with the group's tip (`tool0`), which may touch
/// `flange_link`.
pub fn pick_up(s: &mut PlanningService, id: &str) {
    s.attach_object(gpu_motion_planner::service::AttachRequest {
        id: id.into(),
        link: None,
        touch_links: vec!["flange_link".into()],
        object: None,
    })
    .expect("attach");
}
