//! `gmp controllers`: a MoveIt `moveit_controllers.yaml` read as the node reads it, checked
//! against the bundled robot.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `gmp controllers --file FILE` with the bundled arm's URDF (and SRDF when `srdf`).
fn controllers(file: &Path, srdf: bool) -> std::process::Output {
    let urdf = root().join("urdf/gmp_arm.urdf");
    let srdf_path = root().join("urdf/gmp_arm.srdf");
    let mut args = vec!["controllers", "--file", file.to_str().unwrap()];
    args.extend(["--urdf", urdf.to_str().unwrap()]);
    if srdf {
        args.extend(["--srdf", srdf_path.to_str().unwrap()]);
    }
    Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(&args)
        .output()
        .expect("gmp runs")
}

const FILE: &str = "\
moveit_simple_controller_manager:
  controller_names: [arm_controller, wrist_controller, gripper_controller]
  arm_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    default: true
    joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint]
  wrist_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    joints: [wrist_1_joint, wrist_2_joint, wrist_3_joint]
  gripper_controller:
    type: GripperCommand
    action_ns: gripper_cmd
    max_effort: 5.0
    joints: [finger_joint]
";

#[test]
fn controllers_are_listed_and_checked_against_the_robot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("moveit_controllers.yaml");
    std::fs::write(&path, FILE).unwrap();
    let out = controllers(&path, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let c = v["controllers"].as_array().unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c[0]["action"], "arm_controller/follow_joint_trajectory");
    assert_eq!(c[0]["topic"], "arm_controller/joint_trajectory");
    assert_eq!(c[2]["type"], "GripperCommand");
    assert_eq!(c[2]["gripper"]["command_joint"], "finger_joint");
    assert_eq!(c[2]["gripper"]["max_effort"], 5.0);
    assert!(c[2].get("topic").is_none());
    // The bundled arm has no finger joint; its one group goes to both arm controllers.
    let unknown = v["unknown_joints"].as_array().unwrap();
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(unknown[0].as_str().unwrap().contains("finger_joint"));
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["group"], "arm");
    assert_eq!(
        groups[0]["controllers"],
        serde_json::json!(["arm_controller", "wrist_controller"])
    );
    // Without the wrist controller the group cannot run: named.
    let short = FILE
        .replace("arm_controller, wrist_controller,", "arm_controller,")
        .replace("  wrist_controller:", "  unused_entry:");
    std::fs::write(&path, short).unwrap();
    let out = controllers(&path, false);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let error = v["groups"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("no controller drives joint 'wrist_1_joint'"),
        "{v}"
    );
}

#[test]
fn a_bad_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "controller_names: [a]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(["controllers", "--file", path.to_str().unwrap()])
        .output()
        .expect("gmp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.yaml") && err.contains("'a' is missing"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
