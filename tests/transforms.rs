//! Frames the robot does not know, resolved through a transform buffer (the node fills it from
//! `/tf` and `/tf_static`): markers, point clouds and link poses given in a camera's frame or
//! in `map`, on the bundled robot and scene.

mod common;

use std::sync::{Arc, RwLock};

use common::service::{names, service, tool_pose_at, START};
use gpu_motion_planner::scene::cloud::cloud_index;
use gpu_motion_planner::service::{
    MarkerAction, MarkerKind, MarkerUpdate, PlanningService, ServiceError,
};
use gpu_motion_planner::tf::{SharedTf, TfBuffer};
use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion};

/// A camera above and in front of the robot, looking down: `world -> camera`.
fn camera_in_world() -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(0.6, -0.4, 1.5),
        UnitQuaternion::from_euler_angles(std::f64::consts::PI, 0.2, 0.7),
    )
}

fn with_transforms(s: &mut PlanningService) -> SharedTf {
    let tf: SharedTf = Arc::new(RwLock::new(TfBuffer::default()));
    s.set_transforms(tf.clone());
    tf
}

fn cube_in(frame: &str, id: i32, pose: Isometry3<f64>) -> MarkerUpdate {
    MarkerUpdate {
        ns: "tf".into(),
        id,
        action: MarkerAction::Add,
        kind: MarkerKind::Cube,
        frame_id: frame.into(),
        pose,
        scale: [0.1; 3],
    }
}

fn obstacle_pose(s: &PlanningService, id: &str) -> Isometry3<f64> {
    s.scene_obstacles()
        .find(|o| o.id == id)
        .map(|o| o.pose)
        .unwrap_or_else(|| panic!("no obstacle {id}"))
}

fn close(a: &Isometry3<f64>, b: &Isometry3<f64>) -> bool {
    (a.translation.vector - b.translation.vector).norm() < 1e-9
        && a.rotation.angle_to(&b.rotation) < 1e-9
}

#[test]
fn a_marker_in_a_camera_frame_is_placed_through_the_static_transform() {
    let mut s = service();
    let in_camera = Isometry3::translation(0.05, -0.1, 0.8);
    // Without transforms the frame is refused by name and the scene unchanged.
    let n = s.scene().len();
    let e = s.apply_marker(cube_in("camera", 1, in_camera)).unwrap_err();
    assert!(matches!(e, ServiceError::WrongFrame { .. }), "{e}");
    assert!(e.to_string().contains("frame 'camera'"), "{e}");
    assert_eq!(s.scene().len(), n);

    let tf = with_transforms(&mut s);
    let e = s.apply_marker(cube_in("camera", 1, in_camera)).unwrap_err();
    assert!(e.to_string().contains("no transform on /tf"), "{e}");
    // Known to the buffer but connected to nothing the planner knows: still refused.
    tf.write()
        .unwrap()
        .set_transform("elsewhere", "camera", 0, camera_in_world(), true)
        .unwrap();
    let e = s.apply_marker(cube_in("camera", 1, in_camera)).unwrap_err();
    assert!(e.to_string().contains("/tf does not place it"), "{e}");
    assert_eq!(s.scene().len(), n);

    let mut fresh = TfBuffer::default();
    fresh
        .set_transform("/world", "camera", 0, camera_in_world(), true)
        .unwrap();
    *tf.write().unwrap() = fresh;
    s.apply_marker(cube_in("camera", 1, in_camera))
        .expect("placed");
    assert!(close(
        &obstacle_pose(&s, "tf/1"),
        &(camera_in_world() * in_camera)
    ));
}

#[test]
fn a_frame_below_a_robot_link_moves_with_the_joint_state() {
    // A camera on the wrist: tool0 -> wrist_camera. The robot link is placed by the
    // service's own kinematics at the current joint state, not by whatever /tf says of it.
    let mut s = service();
    let tf = with_transforms(&mut s);
    let mount = Isometry3::translation(0.0, 0.05, 0.03);
    {
        let mut b = tf.write().unwrap();
        b.set_transform("tool0", "wrist_camera", 0, mount, true)
            .unwrap();
        // A stale robot link pose on /tf that must not be used.
        b.set_transform(
            "world",
            "tool0",
            0,
            Isometry3::translation(9.0, 9.0, 9.0),
            true,
        )
        .unwrap();
    }
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("state");
    let in_camera = Isometry3::translation(0.0, 0.0, 0.2);
    s.apply_marker(cube_in("wrist_camera", 2, in_camera))
        .expect("placed");
    let want = tool_pose_at(&s, &START) * mount * in_camera;
    assert!(close(&obstacle_pose(&s, "tf/2"), &want));
}

#[test]
fn the_planning_frame_may_sit_below_a_common_ancestor() {
    // map -> world (the planning frame) and map -> camera: the camera reaches the planning
    // frame through map.
    let mut s = service();
    let tf = with_transforms(&mut s);
    let world_in_map = Isometry3::translation(2.0, 1.0, 0.0);
    let camera_in_map = world_in_map * camera_in_world();
    {
        let mut b = tf.write().unwrap();
        b.set_transform("map", "world", 0, world_in_map, true)
            .unwrap();
        b.set_transform("map", "camera", 0, camera_in_map, true)
            .unwrap();
    }
    let in_camera = Isometry3::translation(0.1, 0.0, 0.9);
    s.apply_marker(cube_in("camera", 3, in_camera))
        .expect("placed");
    assert!(close(
        &obstacle_pose(&s, "tf/3"),
        &(camera_in_world() * in_camera)
    ));
    // Link poses in `map`: the planning frame's pose in map times the link's.
    let n = names(&s);
    let fk = s
        .compute_fk(&Some((n, START.to_vec())), &["tool0".into()], "map")
        .expect("fk in map");
    assert!(close(&fk[0].1, &(world_in_map * tool_pose_at(&s, &START))));
}

#[test]
fn a_cloud_is_placed_as_its_frame_was_at_the_cloud_stamp() {
    let mut s = service();
    let tf = with_transforms(&mut s);
    let n = names(&s);
    s.set_joint_state(&n, &START).expect("state");
    // A camera moving along y at 1 m/s from t = 10 s to t = 11 s.
    let at =
        |y: f64| Isometry3::from_parts(Translation3::new(0.9, y, 1.2), camera_in_world().rotation);
    let second = 1_000_000_000;
    {
        let mut b = tf.write().unwrap();
        b.set_transform("world", "camera", 10 * second, at(-0.5), false)
            .unwrap();
        b.set_transform("world", "camera", 11 * second, at(0.5), false)
            .unwrap();
    }
    // A small blob 1 m in front of the camera.
    let blob: Vec<Point3<f64>> = (0..27)
        .map(|i| {
            let (a, b, c) = (i % 3, (i / 3) % 3, i / 9);
            Point3::new(
                f64::from(a) * 0.01,
                f64::from(b) * 0.01,
                1.0 + f64::from(c) * 0.01,
            )
        })
        .collect();
    let stamp = 10 * second + second / 4; // y = -0.25
    s.set_point_cloud_at("camera", Some(stamp), &blob)
        .expect("cloud");
    let expected = at(-0.25);
    for p in &blob {
        let w = expected * p;
        let inside = s
            .scene_obstacles()
            .filter(|o| cloud_index(&o.id).is_some())
            .any(|o| {
                let (lo, hi) = o.aabb();
                (0..3).all(|k| lo[k] <= w[k] && w[k] <= hi[k])
            });
        assert!(inside, "point {w} not covered");
    }
    // Where the latest transform would put them (y = 0.5), there is nothing.
    let latest = at(0.5) * blob[13];
    assert!(!s
        .scene_obstacles()
        .filter(|o| cloud_index(&o.id).is_some())
        .any(|o| {
            let (lo, hi) = o.aabb();
            (0..3).all(|k| lo[k] <= latest[k] && latest[k] <= hi[k])
        }));

    // A stamp long after the buffer's samples: refused by name, the boxes kept.
    let boxes = s.cloud_obstacle_count();
    let e = s
        .set_point_cloud_at("camera", Some(20 * second), &blob)
        .unwrap_err();
    assert!(matches!(e, ServiceError::BadCloud(_)), "{e}");
    assert!(e.to_string().contains("camera"), "{e}");
    assert_eq!(s.cloud_obstacle_count(), boxes);
    assert!(boxes > 0);
}

#[test]
fn a_pose_goal_in_a_camera_frame_plans_to_the_same_place() {
    use gpu_motion_planner::service::{ServicePlanRequest, ServicePoseGoal};
    let mut s = service();
    let tf = with_transforms(&mut s);
    tf.write()
        .unwrap()
        .set_transform("world", "camera", 0, camera_in_world(), true)
        .unwrap();
    let goal = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];
    let target = tool_pose_at(&s, &goal);
    let in_camera = camera_in_world().inverse() * target;
    let q = in_camera.rotation.quaternion();
    let t = in_camera.translation.vector;
    let request = ServicePlanRequest {
        start: Some((names(&s), START.to_vec())),
        goal_pose: Some(ServicePoseGoal {
            frame: "camera".into(),
            position: [t.x, t.y, t.z],
            orientation: Some([q.i, q.j, q.k, q.w]),
            link: None,
            position_tolerance: None,
            orientation_tolerance: None,
        }),
        ..Default::default()
    };
    let plan = s
        .plan(request)
        .expect("plans to a pose in the camera frame");
    let end = plan.path.last().expect("path");
    let reached = tool_pose_at(&s, end);
    assert!((reached.translation.vector - target.translation.vector).norm() < 2e-3);
    assert!(reached.rotation.angle_to(&target.rotation) < 2e-2);
}
