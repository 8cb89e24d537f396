//! Attached objects through `PlanningService`: pick an obstacle up, carry it (every plan and
//! re-check includes it), put it down elsewhere; bad requests change nothing.

mod common;

use common::service::{cpu_checker, names, pick_up, request, service, tool_pose_at, GOAL, START};
use gpu_motion_planner::cli::demo::bundled;
use gpu_motion_planner::collision::{Checker, ConfigBatch};
use gpu_motion_planner::robot::AttachedObject;
use gpu_motion_planner::scene::{Scene, Shape};
use gpu_motion_planner::service::{
    AttachRequest, ErrorCategory, MarkerAction, MarkerKind, MarkerUpdate, NewObject,
    PlanningService, ServicePlanRequest, ServiceSettings, ATTACHED_NS,
};
use gpu_motion_planner::trajectory;
use nalgebra::{Isometry3, Vector3};

/// How far along the tool's z axis the carried part sits (its centre).
const HOLD: f64 = 0.06;

fn cube(ns: &str, pose: Isometry3<f64>, size: f64) -> MarkerUpdate {
    MarkerUpdate {
        ns: ns.into(),
        id: 0,
        action: MarkerAction::Add,
        kind: MarkerKind::Cube,
        frame_id: "world".into(),
        pose,
        scale: [size; 3],
    }
}

/// Whether group configuration `q` is free for the service's robot (attached objects
/// included) in its scene, on a fresh CPU checker.
fn free(s: &PlanningService, q: &[f64]) -> bool {
    let checker = cpu_checker(s);
    let batch = ConfigBatch::from_rows(q.len(), &[q]).expect("batch");
    checker.check_configs(&batch).expect("check")[0]
}

fn set_state(s: &mut PlanningService, q: &[f64]) {
    let n = names(s);
    s.set_joint_state(&n, q).expect("joint state");
}

#[test]
fn pick_carry_and_place_an_obstacle() {
    let mut s = service();
    let obstacles = s.scene().len();
    set_state(&mut s, &START);
    // A 6 cm part in front of the tool at the start (its face 3 cm from the flange's end).
    let part_pose = tool_pose_at(&s, &START) * Isometry3::translation(0.0, 0.0, HOLD);
    s.apply_marker(cube("part", part_pose, 0.06)).expect("part");
    assert_eq!(s.scene().len(), obstacles + 1);
    let links = s.robot().tree.links.len();
    pick_up(&mut s, "part/0");
    // The part left the scene and hangs on the group's tip, where it was.
    assert_eq!(s.scene().len(), obstacles);
    assert!(s.scene().get("part/0").is_none());
    assert_eq!(s.robot().tree.links.len(), links + 1);
    let held: &AttachedObject = &s.attached_objects()[0];
    assert_eq!(held.link, "tool0");
    assert!((held.pose.translation.vector - Vector3::new(0.0, 0.0, HOLD)).norm() < 1e-9);
    assert!(held.pose.rotation.angle() < 1e-9);
    let markers = s.attached_markers();
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].ns, ATTACHED_NS);
    assert_eq!(markers[0].frame_id, "tool0");
    assert_eq!(markers[0].kind, MarkerKind::Cube);

    // Carrying it: the plan and its re-check include the part.
    let res = s
        .plan(request(&s, &START, &GOAL))
        .expect("plan with the part");
    let path = s.last_plan().expect("path").to_vec();
    trajectory::validate_along(&cpu_checker(&s), &path, &res.trajectory, 0.01)
        .expect("trajectory free with the part");

    // A ball where only the carried part is at the goal: the goal is in collision now.
    let ball_pose = tool_pose_at(&s, &GOAL) * Isometry3::translation(0.0, 0.0, HOLD + 0.06);
    s.apply_marker(MarkerUpdate {
        kind: MarkerKind::Sphere,
        scale: [0.08; 3],
        ..cube("ball", ball_pose, 0.08)
    })
    .expect("ball");
    assert!(!free(&s, &GOAL));
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::GoalInCollision, "{e}");
    // The message names what collides.
    assert!(
        e.to_string().contains("'part/0' with obstacle 'ball/0'"),
        "{e}"
    );
    s.apply_marker(MarkerUpdate {
        action: MarkerAction::Delete,
        ..cube("ball", ball_pose, 0.08)
    })
    .expect("ball removed");
    assert!(free(&s, &GOAL));

    // Put it down at the goal: back in the scene where the tool holds it.
    set_state(&mut s, &GOAL);
    s.detach_object("part/0", false).expect("detach");
    assert!(s.attached_objects().is_empty());
    assert_eq!(s.robot().tree.links.len(), links);
    let placed = s.scene().get("part/0").expect("part back in the scene");
    let expected = tool_pose_at(&s, &GOAL) * Isometry3::translation(0.0, 0.0, HOLD);
    assert!((placed.pose.translation.vector - expected.translation.vector).norm() < 1e-9);
    assert!(matches!(placed.shape, Shape::Box { .. }));
    // The placed part is an obstacle 3 cm in front of the flange: the goal stays free.
    assert!(free(&s, &GOAL));
}

#[test]
fn a_new_object_in_a_link_frame_and_dropping_it() {
    let mut s = service();
    let obstacles = s.scene().len();
    // Given in the tool's own frame: no joint state needed.
    s.attach_object(AttachRequest {
        id: "bar".into(),
        link: Some("tool0".into()),
        touch_links: vec!["flange_link".into()],
        object: Some(NewObject {
            kind: MarkerKind::Cylinder,
            scale: [0.03, 0.03, 0.3],
            frame_id: "tool0".into(),
            pose: Isometry3::translation(0.0, 0.0, 0.15),
        }),
    })
    .expect("attach a new bar");
    assert_eq!(s.scene().len(), obstacles);
    match &s.attached_objects()[0].shape {
        Shape::Cylinder {
            radius,
            half_length,
        } => assert_eq!((*radius, *half_length), (0.015, 0.15)),
        other => panic!("{other:?}"),
    }
    // The bundled scene's start-goal pair is still solvable carrying the bar (the node's
    // end-to-end test plans it).
    let res = s
        .plan(request(&s, &START, &GOAL))
        .expect("plan with the bar");
    assert!(res.trajectory.points.len() >= 2);
    // Dropped, not placed: the scene is unchanged and no joint state was needed.
    s.detach_object("bar", true).expect("drop");
    assert!(s.attached_objects().is_empty());
    assert_eq!(s.scene().len(), obstacles);
    // Placed where the tool holds it, the bar touches the flange it was allowed to touch:
    // the start is in collision from then on.
    s.attach_object(AttachRequest {
        id: "bar".into(),
        link: Some("tool0".into()),
        touch_links: vec!["flange_link".into()],
        object: Some(NewObject {
            kind: MarkerKind::Cube,
            scale: [0.04, 0.04, 0.3],
            frame_id: "tool0".into(),
            pose: Isometry3::translation(0.0, 0.0, 0.15),
        }),
    })
    .expect("attach again");
    assert!(free(&s, &START));
    set_state(&mut s, &START);
    s.detach_object("bar", false).expect("place");
    assert_eq!(s.scene().len(), obstacles + 1);
    assert!(!free(&s, &START));
    let e = s.plan(request(&s, &START, &GOAL)).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::StartInCollision, "{e}");
    assert!(
        e.to_string().contains("'flange_link' with obstacle 'bar'"),
        "{e}"
    );
}

#[test]
fn bad_attach_and_detach_requests_change_nothing() {
    let mut s = service();
    let obstacles = s.scene().len();
    let links = s.robot().tree.links.len();
    let attach = |s: &mut PlanningService, id: &str, link: Option<&str>, obj: Option<NewObject>| {
        s.attach_object(AttachRequest {
            id: id.into(),
            link: link.map(str::to_string),
            touch_links: Vec::new(),
            object: obj,
        })
    };
    let world_box = NewObject {
        kind: MarkerKind::Cube,
        scale: [0.05; 3],
        frame_id: "world".into(),
        pose: Isometry3::translation(0.5, 0.0, 0.5),
    };
    let errors = vec![
        attach(&mut s, "ghost", None, None).unwrap_err(),
        attach(&mut s, "", None, Some(world_box.clone())).unwrap_err(),
        attach(&mut s, "x", Some("no_link"), Some(world_box.clone())).unwrap_err(),
        attach(
            &mut s,
            "x",
            Some("tool0"),
            Some(NewObject {
                kind: MarkerKind::Other(0),
                ..world_box.clone()
            }),
        )
        .unwrap_err(),
        attach(
            &mut s,
            "x",
            Some("tool0"),
            Some(NewObject {
                frame_id: "elsewhere".into(),
                ..world_box.clone()
            }),
        )
        .unwrap_err(),
        // A touch link the robot does not have.
        s.attach_object(AttachRequest {
            id: "x".into(),
            link: Some("tool0".into()),
            touch_links: vec!["nope".into()],
            object: Some(NewObject {
                frame_id: "tool0".into(),
                ..world_box.clone()
            }),
        })
        .unwrap_err(),
        s.detach_object("x", true).unwrap_err(),
    ];
    for e in &errors {
        assert_eq!(e.category(), ErrorCategory::InvalidObject, "{e}");
    }
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert!(
        text[0].contains("ghost") && text[0].contains("no obstacle"),
        "{}",
        text[0]
    );
    assert!(text[2].contains("no_link"), "{}", text[2]);
    assert!(text[4].contains("elsewhere"), "{}", text[4]);
    assert!(text[5].contains("nope"), "{}", text[5]);
    assert!(text[6].contains("not attached"), "{}", text[6]);
    // In the world frame the pose relative to the link needs the current joint state.
    let e = attach(&mut s, "x", Some("tool0"), Some(world_box.clone())).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::InvalidObject, "{e}");
    assert!(e.to_string().contains("joint state"), "{e}");
    assert_eq!(s.scene().len(), obstacles);
    assert_eq!(s.robot().tree.links.len(), links);
    assert!(s.attached_objects().is_empty());
    // Twice the same id.
    set_state(&mut s, &START);
    attach(&mut s, "x", Some("tool0"), Some(world_box.clone())).expect("attach");
    let e = attach(&mut s, "x", Some("tool0"), Some(world_box)).unwrap_err();
    assert!(e.to_string().contains("already attached"), "{e}");
    assert_eq!(s.attached_objects().len(), 1);
}

#[test]
fn a_scene_file_s_attached_objects_are_carried() {
    let (robot, _) = bundled().expect("bundled robot");
    let text = "
obstacles: []
attached:
  - id: bar
    link: tool0
    touch_links: [flange_link]
    box: {size: [0.04, 0.04, 0.3]}
    pose: {position: [0, 0, 0.15]}
  - id: lost
    link: no_such_link
    sphere: {radius: 0.05}
";
    let scene = Scene::from_yaml_str(text, std::path::Path::new(".")).expect("scene");
    let s = PlanningService::new(robot, scene, ServiceSettings::default());
    assert_eq!(s.attached_objects().len(), 1);
    assert_eq!(s.attached_objects()[0].id, "bar");
    assert_eq!(s.attach_errors().len(), 1);
    assert!(s.attach_errors()[0].contains("lost") && s.attach_errors()[0].contains("no_such_link"));
}

/// The persistent roadmap belongs to the robot it was built for: attaching drops it, and the
/// next `drm` plan builds one for the robot carrying the bar, whose path is free with it.
#[test]
fn the_drm_roadmap_is_rebuilt_for_the_carrying_robot() {
    let mut s = service();
    let mut settings = s.settings().clone();
    settings.roadmap_size = 250;
    s.set_settings(settings);
    let drm = |s: &PlanningService| ServicePlanRequest {
        planner: Some("drm".into()),
        ..request(s, &START, &GOAL)
    };
    s.plan(drm(&s)).expect("drm plan");
    assert!(s.has_roadmap());
    s.attach_object(AttachRequest {
        id: "bar".into(),
        link: Some("tool0".into()),
        touch_links: vec!["flange_link".into()],
        object: Some(NewObject {
            kind: MarkerKind::Cube,
            scale: [0.04, 0.04, 0.3],
            frame_id: "tool0".into(),
            pose: Isometry3::translation(0.0, 0.0, 0.15),
        }),
    })
    .expect("attach");
    assert!(!s.has_roadmap());
    let res = s.plan(drm(&s)).expect("drm plan carrying the bar");
    assert!(s.has_roadmap());
    trajectory::validate_along(&cpu_checker(&s), &res.path, &res.trajectory, 0.01)
        .expect("drm trajectory free with the bar");
}

/// The carried object's link has the object's frame: a pose goal for it places the object.
#[test]
fn a_pose_goal_for_the_carried_object_places_it() {
    use gpu_motion_planner::service::ServicePoseGoal;
    let mut s = service();
    s.attach_object(AttachRequest {
        id: "part".into(),
        link: Some("tool0".into()),
        touch_links: vec!["flange_link".into()],
        object: Some(NewObject {
            kind: MarkerKind::Cube,
            scale: [0.06; 3],
            frame_id: "tool0".into(),
            pose: Isometry3::translation(0.0, 0.0, HOLD),
        }),
    })
    .expect("attach");
    // Where the part is when the arm is at GOAL: reachable by construction.
    let target = tool_pose_at(&s, &GOAL) * Isometry3::translation(0.0, 0.0, HOLD);
    let (t, r) = (target.translation.vector, target.rotation.coords);
    let res = s
        .plan(ServicePlanRequest {
            start: Some((names(&s), START.to_vec())),
            goal_pose: Some(ServicePoseGoal {
                frame: String::new(),
                link: Some("part".into()),
                position: [t.x, t.y, t.z],
                orientation: Some([r.x, r.y, r.z, r.w]),
                position_tolerance: None,
                orientation_tolerance: None,
            }),
            ..Default::default()
        })
        .expect("plan the part to the pose");
    let end = &res.trajectory.points.last().expect("points").positions;
    let robot = s.robot();
    let group = s.group().expect("group");
    let state = group.full_state(&robot.tree.neutral_state(), end);
    let poses = robot.attached_poses(&state).expect("poses");
    let placed = poses[0].1;
    assert!((placed.translation.vector - t).norm() < 1e-3, "{placed:?}");
    assert!(placed.rotation.angle_to(&target.rotation) < 1e-2);
}
