//! Bad input gives a clear error naming the input, never a panic.

mod common;

use std::path::Path;
use std::process::Command;

use gpu_motion_planner::collision::{
    Checker, CheckerOptions, CollisionError, ConfigBatch, CpuChecker,
};
use gpu_motion_planner::robot::{LoadOptions, RobotError, RobotModel};
use gpu_motion_planner::scene::Scene;

fn gmp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(args)
        .output()
        .expect("gmp runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `gmp SUB --urdf test_arm3.urdf [--scene SCENE] FLAG FILE --backend cpu`.
fn gmp_arm3(sub: &str, scene: Option<&Path>, flag: &str, file: &Path) -> (i32, String, String) {
    let urdf = common::root().join("urdf/test_arm3.urdf");
    let mut args = vec![sub, "--urdf", urdf.to_str().unwrap()];
    if let Some(scene) = scene {
        args.extend(["--scene", scene.to_str().unwrap()]);
    }
    args.extend([flag, file.to_str().unwrap(), "--backend", "cpu"]);
    gmp(&args)
}

#[test]
fn malformed_urdf_is_an_error() {
    let e = RobotModel::from_urdf_str(
        "<robot name='x'><link name='a'></robot>",
        None,
        None,
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, RobotError::Urdf { .. }), "{e}");
    assert!(e.to_string().contains("malformed URDF"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.urdf");
    std::fs::write(&p, "<robot name='x'><link name='a'>").unwrap();
    let (code, _, err) = gmp(&[
        "fk",
        "--urdf",
        p.to_str().unwrap(),
        "--configs",
        "/nonexistent.json",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.urdf"), "stderr must name the file: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn urdf_that_is_not_a_tree_is_an_error() {
    let text = r#"<robot name="x"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="fixed"><parent link="c"/><child link="b"/></joint></robot>"#;
    let e = RobotModel::from_urdf_str(text, None, None, &LoadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("child of two joints"), "{e}");
}

#[test]
fn missing_mesh_names_link_and_uri() {
    let text = r#"<robot name="x"><link name="body"><collision><geometry><mesh filename="package://nowhere/meshes/missing.stl"/></geometry></collision></link></robot>"#;
    let e = RobotModel::from_urdf_str(
        text,
        Some(std::path::Path::new("/tmp")),
        None,
        &LoadOptions::default(),
    )
    .unwrap_err();
    match &e {
        RobotError::MeshNotFound { link, uri, .. } => {
            assert_eq!(link, "body");
            assert_eq!(uri, "package://nowhere/meshes/missing.stl");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn unknown_joint_name_is_an_error() {
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    let e = robot.group_from_joints(&["joint1", "elbow"]).unwrap_err();
    assert!(
        matches!(e, RobotError::UnknownJoint(ref n) if n == "elbow"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c.json");
    std::fs::write(
        &c,
        r#"{"joint_names": ["joint1", "elbow"], "configs": [[0, 0]]}"#,
    )
    .unwrap();
    let (code, _, err) = gmp_arm3("check", None, "--configs", &c);
    assert_eq!(code, 2);
    assert!(err.contains("unknown joint 'elbow'"), "{err}");
}

#[test]
fn nan_in_a_configuration_is_an_error() {
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    let group = robot
        .group_from_joints(&["joint1", "joint2", "joint3"])
        .unwrap();
    let checker = CpuChecker::new(
        &robot,
        &group,
        &robot.tree.neutral_state(),
        &Scene::new("world"),
        CheckerOptions::default(),
    )
    .unwrap();
    let b = ConfigBatch::from_rows(3, &[[0.0, 0.0, 0.0], [0.0, f64::NAN, 0.0]]).unwrap();
    match checker.check_configs(&b).unwrap_err() {
        CollisionError::NonFinite { index, joint } => {
            assert_eq!(index, 1);
            assert_eq!(joint, "joint2");
        }
        other => panic!("unexpected {other}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c.json");
    std::fs::write(
        &c,
        r#"{"joint_names": ["joint1", "joint2", "joint3"], "configs": [[0, "nan", 0]]}"#,
    )
    .unwrap();
    let (code, _, err) = gmp_arm3("check", None, "--configs", &c);
    assert_eq!(code, 2);
    assert!(
        err.contains("joint2") && err.contains("not a finite number"),
        "{err}"
    );
}

#[test]
fn scene_with_unknown_shape_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("scene.yaml");
    std::fs::write(&s, "frame: world\nobstacles:\n  - id: blob\n    torus: {radius: 0.1}\n    pose: {position: [0, 0, 0]}\n").unwrap();
    let e = gpu_motion_planner::scene::load_scene(&s)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("torus") || e.contains("blob"),
        "error must name the shape or obstacle: {e}"
    );
    let c = dir.path().join("c.json");
    std::fs::write(
        &c,
        r#"{"joint_names": ["joint1", "joint2", "joint3"], "configs": [[0, 0, 0]]}"#,
    )
    .unwrap();
    let (code, _, err) = gmp_arm3("check", Some(&s), "--configs", &c);
    assert_eq!(code, 2);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn cli_check_gives_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("scene.yaml");
    // A box right where link2 is at q = 0 (x in [0.05, 0.35] at height 0.4).
    std::fs::write(&s, "frame: world\nobstacles:\n  - id: block\n    box: {size: [0.1, 0.1, 0.1]}\n    pose: {position: [0.25, 0, 0.4]}\n").unwrap();
    let c = dir.path().join("c.json");
    std::fs::write(
        &c,
        r#"{"joint_names": ["joint1", "joint2", "joint3"], "configs": [[0, 0, 0], [3.0, 0, 0]]}"#,
    )
    .unwrap();
    let (code, out, err) = gmp_arm3("check", Some(&s), "--configs", &c);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["valid"], serde_json::json!([false, true]));
    let m = dir.path().join("m.json");
    std::fs::write(&m, r#"{"joint_names": ["joint1", "joint2", "joint3"], "motions": [[[3.0, 0, 0], [-3.0, 0, 0]], [[3.0, 0, 0], [2.0, 0, 0]]]}"#).unwrap();
    let (code, out, err) = gmp_arm3("check-motions", Some(&s), "--motions", &m);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Sweeping joint1 from 3 to -3 passes through 0, where link2 hits the block.
    assert_eq!(v["valid"], serde_json::json!([false, true]));
}
