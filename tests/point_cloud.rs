//! Point clouds as obstacles (`scene::cloud`, `PlanningService::set_point_cloud`, the node's
//! `~/points`, `gmp plan --cloud`) on the bundled robot and scene.

mod common;

use common::service::{cpu_checker, names, request, service, tool_pose_at, GOAL, START};
use gpu_motion_planner::collision::Checker;
use gpu_motion_planner::scene::cloud::{cloud_index, CloudSettings};
use gpu_motion_planner::service::{PlanningService, ServiceError, StateCheckRequest};
use nalgebra::{Point3, Vector3};
use std::process::Command;

/// Halfway between START and GOAL in joint space: the tool swings through here on the way.
const MID: [f64; 6] = [-2.0, 0.3, 0.8, 0.0, 0.0, 0.0];

/// Points filling a ball of `radius` about `centre`, on a 1 cm lattice.
fn ball(centre: Vector3<f64>, radius: f64) -> Vec<Point3<f64>> {
    let n = (radius / 0.01).ceil() as i32;
    let mut points = Vec::new();
    for i in -n..=n {
        for j in -n..=n {
            for k in -n..=n {
                let d = Vector3::new(f64::from(i), f64::from(j), f64::from(k)) * 0.01;
                if d.norm() <= radius {
                    points.push(Point3::from(centre + d));
                }
            }
        }
    }
    points
}

/// Points on and just inside every collision body of the robot at group configuration `q`.
fn robot_points(s: &PlanningService, q: &[f64]) -> Vec<Point3<f64>> {
    let robot = s.robot();
    let group = s.group().expect("group");
    let frames = robot
        .tree
        .forward_kinematics(&group.full_state(&robot.tree.neutral_state(), q));
    let mut points = Vec::new();
    for b in &robot.bodies {
        let placed = b.polytope.transformed(&frames[b.link]);
        let (centre, _) = placed.bounding_sphere();
        for v in &placed.vertices {
            points.push(*v);
            points.push(centre + (v - centre) * 0.7);
        }
    }
    points
}

fn check(s: &mut PlanningService, q: &[f64]) -> (bool, Vec<String>) {
    let c = s
        .check_state(&StateCheckRequest {
            state: Some((names(s), q.to_vec())),
            ..Default::default()
        })
        .expect("check");
    (c.valid, c.contacts)
}

fn with_state(q: &[f64]) -> PlanningService {
    let mut s = service();
    let n = names(&s);
    s.set_joint_state(&n, q).expect("joint state");
    s
}

/// Whether a kept point is inside one of the cloud's boxes (axis-aligned: the box is its own
/// bounding box).
fn covered(s: &PlanningService, p: &Point3<f64>) -> bool {
    s.scene_obstacles()
        .filter(|o| cloud_index(&o.id).is_some())
        .any(|o| {
            let (lo, hi) = o.aabb();
            (0..3).all(|k| lo[k] <= p[k] && p[k] <= hi[k])
        })
}

#[test]
fn the_robot_is_cut_out_and_the_rest_blocks_the_way() {
    let mut s = with_state(&START);
    assert!(check(&mut s, &MID).0, "MID is free in the bundled scene");
    let obstacles_before = s.scene().len();
    let tool = tool_pose_at(&s, &MID).translation.vector;
    let blob = ball(tool, 0.06);
    let own = robot_points(&s, &START);
    let mut cloud = blob.clone();
    cloud.extend(&own);
    // The base (a cylinder of radius 0.12 m from z 0 to 0.1 m at the origin, fixed) read off
    // the URDF: its bottom centre, a point on its side and one just above its top.
    let base = [
        Point3::new(0.0, 0.0, 0.0),
        Point3::new(0.0, -0.12, 0.05),
        Point3::new(0.05, 0.05, 0.11),
    ];
    cloud.extend(base);
    let stats = s.set_point_cloud("", &cloud).expect("cloud");
    assert_eq!(stats.on_robot, own.len() + base.len(), "{stats:?}");
    assert_eq!(stats.points, cloud.len());
    assert!(stats.boxes >= 1 && stats.boxes <= stats.voxels, "{stats:?}");
    assert_eq!(s.cloud_obstacle_count(), stats.boxes);
    assert_eq!(s.scene().len(), obstacles_before + stats.boxes);
    assert!(blob.iter().all(|p| covered(&s, p)));

    // The robot stays free where it stands, and is blocked where the blob is.
    assert_eq!(check(&mut s, &START), (true, vec![]));
    let (valid, contacts) = check(&mut s, &MID);
    assert!(!valid);
    assert!(
        contacts.iter().any(|c| c.contains("obstacle 'pointcloud/")),
        "{contacts:?}"
    );

    // A plan goes around it, and an independent checker finds its path free of the boxes.
    let plan = s
        .plan(request(&s, &START, &GOAL))
        .expect("plan around the cloud");
    let reference = cpu_checker(&s);
    for w in plan.path.windows(2) {
        let steps = (w[0]
            .iter()
            .zip(&w[1])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
            / 0.005)
            .ceil()
            .max(1.0) as usize;
        for i in 0..=steps {
            let t = i as f64 / steps as f64;
            let q: Vec<f64> = w[0]
                .iter()
                .zip(&w[1])
                .map(|(a, b)| a + t * (b - a))
                .collect();
            assert!(reference.check_config(&q).expect("check"), "{q:?}");
        }
    }
}

#[test]
fn the_table_under_the_base_does_not_touch_it() {
    // A camera's view of the table top (z = -0.005, the base stands on it at z = 0), 1 cm
    // apart, at every voxel size: voxels of the points just outside the padding would reach
    // up to z = 0 and into the base's footprint.
    let table: Vec<Point3<f64>> = (0..120)
        .flat_map(|i| {
            (0..160).map(move |j| {
                Point3::new(
                    -0.05 + 0.01 * f64::from(i),
                    -0.8 + 0.01 * f64::from(j),
                    -0.005,
                )
            })
        })
        .collect();
    for resolution in [0.02, 0.04, 0.08] {
        let mut s = with_state(&START);
        let mut settings = s.settings().clone();
        settings.cloud.resolution = resolution;
        s.set_settings(settings);
        let stats = s.set_point_cloud("world", &table).expect("table");
        assert!(stats.boxes > 0, "{stats:?}");
        assert_eq!(check(&mut s, &START), (true, vec![]), "{resolution}");
        assert_eq!(check(&mut s, &GOAL), (true, vec![]), "{resolution}");
        // Away from the robot the table top is covered.
        assert!(covered(&s, &Point3::new(0.9, 0.6, -0.005)), "{resolution}");
        // Every point not taken as the robot's is in a box (a point on a box's face may
        // be both).
        assert!(
            covered_count(&s, &table) + stats.on_robot >= table.len(),
            "{resolution}: {stats:?}"
        );
        assert!(stats.on_robot < table.len() / 10, "{resolution}: {stats:?}");
    }
}

fn covered_count(s: &PlanningService, points: &[Point3<f64>]) -> usize {
    points.iter().filter(|p| covered(s, p)).count()
}

#[test]
fn a_new_cloud_replaces_the_last_and_an_empty_one_clears_it() {
    let mut s = with_state(&START);
    let others: Vec<String> = s.scene_obstacles().map(|o| o.id.clone()).collect();
    let at_mid = tool_pose_at(&s, &MID).translation.vector;
    let at_goal = tool_pose_at(&s, &GOAL).translation.vector;
    let mut two = ball(at_mid, 0.05);
    two.extend(ball(at_goal + Vector3::new(0.0, 0.0, 0.3), 0.05));
    let first = s.set_point_cloud("world", &two).expect("first").boxes;
    assert!(!check(&mut s, &MID).0);

    let one = ball(at_goal + Vector3::new(0.0, 0.0, 0.3), 0.05);
    let second = s.set_point_cloud("world", &one).expect("second").boxes;
    assert!(second < first, "{second} boxes after {first}");
    assert_eq!(s.cloud_obstacle_count(), second);
    let mut ids: Vec<usize> = s
        .scene_obstacles()
        .filter_map(|o| cloud_index(&o.id))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..second).collect::<Vec<_>>());
    // The blob at MID is gone: free again.
    assert!(check(&mut s, &MID).0);

    s.set_point_cloud("world", &[]).expect("empty");
    assert_eq!(s.cloud_obstacle_count(), 0);
    let left: Vec<String> = s.scene_obstacles().map(|o| o.id.clone()).collect();
    assert_eq!(left, others);
}

#[test]
fn a_cloud_in_a_link_frame_is_placed_where_the_link_is() {
    let mut s = with_state(&START);
    let local = ball(Vector3::new(0.0, 0.0, 0.2), 0.03);
    s.set_point_cloud("tool0", &local).expect("cloud in tool0");
    let tool = tool_pose_at(&s, &START);
    assert!(local.iter().all(|p| covered(&s, &(tool * p))));
    // Not where the points would be read in the planning frame.
    assert!(!local.iter().any(|p| covered(&s, p)));
}

#[test]
fn clouds_that_cannot_be_used_are_named_and_change_nothing() {
    let blob = ball(Vector3::new(0.3, 0.3, 0.3), 0.03);
    let mut s = service();
    let e = s.set_point_cloud("world", &blob).unwrap_err();
    assert!(matches!(e, ServiceError::BadCloud(_)));
    assert!(e.to_string().contains("joint state"), "{e}");

    let mut s = with_state(&START);
    s.set_point_cloud("world", &blob).expect("first cloud");
    let scene: Vec<String> = s.scene_obstacles().map(|o| o.id.clone()).collect();
    let e = s.set_point_cloud("camera_link", &blob).unwrap_err();
    assert!(e.to_string().contains("'camera_link'"), "{e}");
    let mut settings = s.settings().clone();
    settings.cloud = CloudSettings {
        resolution: 0.0,
        ..CloudSettings::default()
    };
    s.set_settings(settings);
    let e = s.set_point_cloud("world", &blob).unwrap_err();
    assert!(e.to_string().contains("resolution"), "{e}");
    let after: Vec<String> = s.scene_obstacles().map(|o| o.id.clone()).collect();
    assert_eq!(after, scene);
}

#[test]
fn max_range_and_min_points_drop_what_they_should() {
    let mut s = with_state(&START);
    let mut settings = s.settings().clone();
    settings.cloud = CloudSettings {
        max_range: 1.0,
        min_points: 5,
        ..CloudSettings::default()
    };
    s.set_settings(settings);
    let near = ball(Vector3::new(0.3, 0.3, 0.3), 0.03);
    let mut cloud = near.clone();
    cloud.push(Point3::new(2.0, 0.0, 0.5)); // beyond 1 m of the sensor at the origin
    cloud.push(Point3::new(-0.3, 0.4, 0.5)); // alone in its voxel: noise
    cloud.push(Point3::new(f64::NAN, 0.0, 0.0));
    let stats = s.set_point_cloud("world", &cloud).expect("cloud");
    assert_eq!((stats.out_of_range, stats.non_finite), (1, 1));
    assert!(near.iter().all(|p| covered(&s, p)));
    assert!(!covered(&s, &Point3::new(-0.3, 0.4, 0.5)));
    assert!(!covered(&s, &Point3::new(2.0, 0.0, 0.5)));
}

#[test]
fn gmp_plan_takes_a_cloud_file() {
    let s = with_state(&START);
    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, points: &[Point3<f64>]| {
        let path = dir.path().join(name);
        let text: String = points
            .iter()
            .map(|p| format!("{} {} {}\n", p.x, p.y, p.z))
            .collect();
        std::fs::write(&path, format!("# x y z\n{text}")).expect("write");
        path.display().to_string()
    };
    let root = common::root();
    let plan = |cloud: &str| {
        Command::new(env!("CARGO_BIN_EXE_gmp"))
            .args(["plan", "--urdf"])
            .arg(root.join("urdf/gmp_arm.urdf"))
            .arg("--srdf")
            .arg(root.join("urdf/gmp_arm.srdf"))
            .arg("--scene")
            .arg(root.join("config/default_scene.yaml"))
            .args(["--backend", "cpu", "--seed", "3", "--start"])
            .arg(serde_json::to_string(&START).expect("json"))
            .arg("--goal")
            .arg(serde_json::to_string(&GOAL).expect("json"))
            .args(["--cloud", cloud])
            .output()
            .expect("gmp runs")
    };
    // A blob around the goal's tool, with the robot's own points at the start: the start is
    // cut out, the goal is blocked.
    let mut cloud = ball(tool_pose_at(&s, &GOAL).translation.vector, 0.05);
    cloud.extend(robot_points(&s, &START));
    let out = plan(&write("goal_blocked.xyz", &cloud));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(
        text.contains("goal configuration is in collision") && text.contains("pointcloud/"),
        "{text}"
    );

    // Only the robot's own points: the plan succeeds.
    let out = plan(&write("robot_only.xyz", &robot_points(&s, &START)));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["success"], true, "{v}");

    let out = plan("/no/such/cloud.pcd");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/cloud.pcd"));
}

#[test]
fn gmp_bench_cloud_writes_its_results() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args([
            "bench",
            "cloud",
            "--points",
            "3000,6000",
            "--resolutions",
            "0.05",
            "--configs",
            "300",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("gmp runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = v["processing"].as_array().expect("processing");
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["boxes"].as_u64().is_some_and(|b| b > 0)));
    // The robot's share of the points (about a tenth) is cut out.
    assert!(rows
        .iter()
        .all(|r| r["on_robot"].as_u64().is_some_and(|n| n > 0)));
    let checks = v["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 2);
    assert!(checks[1]["configs_per_s"].as_f64().is_some_and(|r| r > 0.0));
    let written: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(
        written.iter().any(|f| f.ends_with(".json")) && written.iter().any(|f| f.ends_with(".md")),
        "{written:?}"
    );
}
