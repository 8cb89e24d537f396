//! A MoveIt configuration package as the source of a robot (`robot::moveit_config`,
//! `--moveit-config`): the files found through `.setup_assistant` or by MoveIt's file names,
//! package lookup in a source workspace and on a package path, xacro expansion by the xacro
//! program, and errors that name the file and key.

use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_motion_planner::robot::moveit_config::{
    expand_xacro_with, FoundBy, MoveItConfig, MoveItConfigError,
};
use gpu_motion_planner::robot::{LoadOptions, RobotModel};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(root().join(from), to).unwrap();
}

fn package_xml(name: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<package format=\"3\">\n  <name>{name}</name>\n  \
         <version>0.0.1</version>\n  <description>test</description>\n  \
         <maintainer email=\"a@b.c\">a</maintainer>\n  <license>Apache-2.0</license>\n\
         </package>\n"
    )
}

const CONTROLLERS: &str = "\
moveit_simple_controller_manager:
  controller_names: [arm_controller]
  arm_controller:
    type: FollowJointTrajectory
    action_ns: follow_joint_trajectory
    default: true
    joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint, wrist_1_joint, wrist_2_joint, wrist_3_joint]
";

/// A source workspace as the Setup Assistant leaves it: `src/arm_description` (folder name
/// not the package's) with the bundled arm's URDF, and `src/my_arm_moveit_config` with
/// `.setup_assistant`, the SRDF, joint limits and controllers. Returns the config's folder.
fn workspace(ws: &Path, urdf_rel: &str, xacro_args: &str) -> PathBuf {
    let desc = ws.join("src/arm_description");
    write(
        &desc.join("package.xml"),
        &package_xml("my_arm_description"),
    );
    copy("urdf/gmp_arm.urdf", &desc.join("urdf/my_arm.urdf"));
    let cfg = ws.join("src/my_arm_moveit_config");
    write(
        &cfg.join("package.xml"),
        &package_xml("my_arm_moveit_config"),
    );
    write(
        &cfg.join(".setup_assistant"),
        &format!(
            "moveit_setup_assistant_config:\n  urdf:\n    package: my_arm_description\n    \
             relative_path: {urdf_rel}\n    xacro_args: \"{xacro_args}\"\n  srdf:\n    \
             relative_path: config/my_arm.srdf\n  package_settings:\n    author_name: t\n    \
             generated_timestamp: 1700000000\n"
        ),
    );
    copy("urdf/gmp_arm.srdf", &cfg.join("config/my_arm.srdf"));
    copy(
        "config/gmp_arm_joint_limits.yaml",
        &cfg.join("config/joint_limits.yaml"),
    );
    write(&cfg.join("config/moveit_controllers.yaml"), CONTROLLERS);
    cfg
}

fn bundled_with_limits() -> RobotModel {
    let mut robot = RobotModel::from_urdf_file(
        &root().join("urdf/gmp_arm.urdf"),
        Some(&root().join("urdf/gmp_arm.srdf")),
        &LoadOptions::default(),
    )
    .unwrap();
    let path = root().join("config/gmp_arm_joint_limits.yaml");
    let file = gpu_motion_planner::robot::JointLimitsFile::read(&path).unwrap();
    robot
        .apply_joint_limits(&file, &path.display().to_string())
        .unwrap();
    robot
}

#[test]
fn setup_assistant_package_in_a_source_workspace_loads_the_robot() {
    let ws = tempfile::tempdir().unwrap();
    let cfg_dir = workspace(ws.path(), "urdf/my_arm.urdf", "");
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert_eq!(cfg.found_by, FoundBy::SetupAssistant);
    assert_eq!(cfg.robot_name, "my_arm");
    assert_eq!(
        cfg.urdf,
        ws.path().join("src/arm_description/urdf/my_arm.urdf")
    );
    assert_eq!(cfg.srdf, cfg_dir.join("config/my_arm.srdf"));
    assert_eq!(
        cfg.joint_limits.as_deref(),
        Some(cfg_dir.join("config/joint_limits.yaml").as_path())
    );
    assert_eq!(
        cfg.controllers.as_deref(),
        Some(cfg_dir.join("config/moveit_controllers.yaml").as_path())
    );
    // What is not read is said: here a ros2_controllers.yaml. A kinematics.yaml found
    // after the package was located is not (the package is located again to read it).
    write(&cfg_dir.join("config/ros2_controllers.yaml"), "{}\n");
    write(
        &cfg_dir.join("config/kinematics.yaml"),
        "arm:\n  kinematics_solver: kdl_kinematics_plugin/KDLKinematicsPlugin\n  \
         position_only_ik: true\n",
    );
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert_eq!(
        cfg.unread_files(),
        vec!["ros2_controllers.yaml".to_string()]
    );
    let line = cfg.summary();
    assert!(
        line.contains("my_arm.urdf")
            && line.contains("joint_limits.yaml")
            && line.contains("kinematics.yaml")
            && line.ends_with("not read: ros2_controllers.yaml"),
        "{line}"
    );
    let kinematics = cfg.kinematics().unwrap().expect("read");
    assert!(kinematics.position_only("arm"));
    let robot = cfg.load_robot(&LoadOptions::default()).unwrap();
    assert!(robot.position_only_ik("arm") && !robot.position_only_ik("hand"));
    let want = bundled_with_limits();
    assert_eq!(robot.tree.variable_names, want.tree.variable_names);
    assert_eq!(robot.bodies.len(), want.bodies.len());
    assert_eq!(robot.allowed.len(), want.allowed.len());
    assert!(robot.named_state("arm", "ready").is_ok());
    for (a, b) in robot.tree.joints.iter().zip(&want.tree.joints) {
        assert_eq!(a.limits.acceleration, b.limits.acceleration, "{}", a.name);
        assert_eq!(a.limits.velocity, b.limits.velocity, "{}", a.name);
    }
    // The joint limits file was applied: its accelerations differ from the URDF's default.
    let plain = RobotModel::from_urdf_file(
        &root().join("urdf/gmp_arm.urdf"),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    assert_ne!(
        robot.tree.joints[1].limits.acceleration,
        plain.tree.joints[1].limits.acceleration
    );
}

#[test]
fn packages_are_found_by_name_on_the_package_path() {
    let ws = tempfile::tempdir().unwrap();
    workspace(ws.path(), "urdf/my_arm.urdf", "");
    let roots = [ws.path().join("elsewhere"), ws.path().join("src")];
    // By name: the configuration package's folder is `<root>/<name>`; its URDF package is
    // found next to it by its package.xml.
    let cfg = MoveItConfig::locate_in("my_arm_moveit_config", &roots).unwrap();
    assert_eq!(cfg.dir, ws.path().join("src/my_arm_moveit_config"));
    // An unknown name lists where it looked.
    let err = MoveItConfig::locate_in("no_such_moveit_config", &roots).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, MoveItConfigError::NotFound { .. }), "{msg}");
    assert!(msg.contains("no_such_moveit_config"), "{msg}");
    assert!(msg.contains("elsewhere/no_such_moveit_config"), "{msg}");
}

#[test]
fn without_setup_assistant_the_robot_is_found_by_moveit_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let cfg_dir = dir.path().join("gmp_arm_moveit_config");
    copy("urdf/gmp_arm.urdf", &cfg_dir.join("config/gmp_arm.urdf"));
    copy("urdf/gmp_arm.srdf", &cfg_dir.join("config/gmp_arm.srdf"));
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert_eq!(cfg.found_by, FoundBy::Convention);
    assert_eq!(cfg.robot_name, "gmp_arm");
    assert_eq!(cfg.urdf, cfg_dir.join("config/gmp_arm.urdf"));
    assert!(cfg.joint_limits.is_none() && cfg.controllers.is_none());
    let robot = cfg.load_robot(&LoadOptions::default()).unwrap();
    assert!(robot.srdf.is_some());

    // Another name: the only URDF and SRDF of config/ are taken ...
    let other = dir.path().join("cell_moveit_config");
    copy("urdf/gmp_arm.urdf", &other.join("config/arm.urdf"));
    copy("urdf/gmp_arm.srdf", &other.join("config/arm.srdf"));
    let cfg = MoveItConfig::locate_in(other.to_str().unwrap(), &[]).unwrap();
    assert_eq!(cfg.urdf, other.join("config/arm.urdf"));
    // ... but not one of several, and none is an error naming what was looked for.
    copy("urdf/gmp_arm.urdf", &other.join("config/arm2.urdf"));
    let msg = MoveItConfig::locate_in(other.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("several URDF") && msg.contains("arm2.urdf"),
        "{msg}"
    );
    let empty = dir.path().join("empty_moveit_config");
    std::fs::create_dir_all(empty.join("config")).unwrap();
    let msg = MoveItConfig::locate_in(empty.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("no URDF") && msg.contains("empty.urdf.xacro"),
        "{msg}"
    );
}

#[test]
fn bad_setup_assistant_files_are_named_with_their_key() {
    let ws = tempfile::tempdir().unwrap();
    let cfg_dir = workspace(ws.path(), "urdf/my_arm.urdf", "");
    let setup = cfg_dir.join(".setup_assistant");
    let cases = [
        ("moveit_setup_assistant_config:\n  srdf:\n    relative_path: config/my_arm.srdf\n", "no urdf entry"),
        ("moveit_setup_assistant_config:\n  urdf:\n    relative_path: urdf/my_arm.urdf\n  srdf:\n    relative_path: config/my_arm.srdf\n", "urdf.package is missing"),
        ("moveit_setup_assistant_config:\n  urdf:\n    package: nowhere_description\n    relative_path: urdf/my_arm.urdf\n  srdf:\n    relative_path: config/my_arm.srdf\n", "urdf.package 'nowhere_description' not found"),
        ("moveit_setup_assistant_config:\n  urdf:\n    package: my_arm_description\n    relative_path: urdf/missing.urdf\n  srdf:\n    relative_path: config/my_arm.srdf\n", "urdf.relative_path 'urdf/missing.urdf'"),
        ("moveit_setup_assistant_config:\n  urdf:\n    package: my_arm_description\n    relative_path: urdf/my_arm.urdf\n    xacro_args: \"prefix\"\n  srdf:\n    relative_path: config/my_arm.srdf\n", "'prefix' is not name:=value"),
        ("moveit_setup_assistant_config:\n  urdf:\n    package: my_arm_description\n    relative_path: urdf/my_arm.urdf\n  srdf:\n    relative_path: [1]\n", "srdf.relative_path must be a string"),
        ("urdf: {}\n", "no moveit_setup_assistant_config"),
        ("moveit_setup_assistant_config: [\n", "invalid YAML"),
    ];
    for (text, want) in cases {
        write(&setup, text);
        let msg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(want) && msg.contains(".setup_assistant"),
            "{text}: {msg}"
        );
    }
    // Older files spell the keys in capitals.
    write(
        &setup,
        "moveit_setup_assistant_config:\n  URDF:\n    package: my_arm_description\n    \
         relative_path: urdf/my_arm.urdf\n  SRDF:\n    relative_path: config/my_arm.srdf\n",
    );
    assert!(MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).is_ok());
}

/// A stand-in for the xacro program: records its arguments in `args.txt` next to itself and
/// prints `urdf`, or fails with a message when the file name holds "fail".
fn fake_xacro(dir: &Path, urdf: &Path) -> PathBuf {
    let script = dir.join("fake_xacro");
    write(
        &script,
        &format!(
            "#!/bin/sh\necho \"$@\" > '{}'\ncase \"$1\" in *fail*) echo 'line 3: undefined \
             property arm_length' >&2; exit 2;; esac\ncat '{}'\n",
            dir.join("args.txt").display(),
            urdf.display()
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

#[test]
fn xacro_files_are_expanded_by_the_xacro_program() {
    let dir = tempfile::tempdir().unwrap();
    let script = fake_xacro(dir.path(), &root().join("urdf/gmp_arm.urdf"));
    let file = dir.path().join("arm.urdf.xacro");
    write(&file, "<robot/>");
    let args = vec!["prefix:=left_".to_string(), "use_gripper:=true".to_string()];
    let text = expand_xacro_with(&script, &file, &args).unwrap();
    assert_eq!(
        text,
        std::fs::read_to_string(root().join("urdf/gmp_arm.urdf")).unwrap()
    );
    let recorded = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert_eq!(
        recorded.trim(),
        format!("{} prefix:=left_ use_gripper:=true", file.display())
    );
    // A failing expansion names the file and passes on what xacro said.
    let bad = dir.path().join("fail.urdf.xacro");
    write(&bad, "<robot/>");
    let msg = expand_xacro_with(&script, &bad, &[])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("fail.urdf.xacro") && msg.contains("undefined property arm_length"),
        "{msg}"
    );
    // No program: a clear error saying how to get one.
    let msg = expand_xacro_with(&dir.path().join("no_xacro_here"), &file, &[])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("cannot run") && msg.contains("install xacro"),
        "{msg}"
    );
}

fn gmp(args: &[&str], xacro: Option<&Path>) -> (i32, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gmp"));
    cmd.args(args);
    if let Some(x) = xacro {
        cmd.env("GMP_XACRO", x);
    }
    let out = cmd.output().expect("gmp runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_takes_a_moveit_config_package() {
    let ws = tempfile::tempdir().unwrap();
    let cfg = workspace(ws.path(), "urdf/my_arm.urdf.xacro", "prefix:=none");
    write(
        &ws.path().join("src/arm_description/urdf/my_arm.urdf.xacro"),
        "<robot/>",
    );
    let xacro = fake_xacro(ws.path(), &root().join("urdf/gmp_arm.urdf"));
    let c = cfg.to_str().unwrap();

    let (code, v, err) = gmp(&["info", "--moveit-config", c], Some(&xacro));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["moveit_config"]["found_by"], ".setup_assistant");
    assert_eq!(v["moveit_config"]["xacro_args"][0], "prefix:=none");
    assert_eq!(v["groups"][0]["name"], "arm");
    assert_eq!(v["default_scaling"]["velocity"], 0.5);
    let recorded = std::fs::read_to_string(ws.path().join("args.txt")).unwrap();
    assert!(
        recorded.contains("my_arm.urdf.xacro prefix:=none"),
        "{recorded}"
    );

    let (code, v, err) = gmp(
        &[
            "plan",
            "--moveit-config",
            c,
            "--start",
            "home",
            "--goal",
            "ready",
            "--planner",
            "rrt_connect",
            "--seed",
            "3",
        ],
        Some(&xacro),
    );
    assert_eq!(code, 0, "{err}");
    let points = v["points"].as_array().unwrap();
    let last = points.last().unwrap()["positions"].as_array().unwrap();
    let ready = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];
    for (x, want) in last.iter().zip(ready) {
        assert!((x.as_f64().unwrap() - want).abs() < 1e-9, "{last:?}");
    }

    // The URDF as xacro printed it and the SRDF, as text (what the launch file gives
    // robot_state_publisher).
    let (code, v, err) = gmp(&["urdf", "--moveit-config", c], Some(&xacro));
    assert_eq!(code, 0, "{err}");
    let bundled = std::fs::read_to_string(root().join("urdf/gmp_arm.urdf")).unwrap();
    assert_eq!(v["urdf"].as_str(), Some(bundled.as_str()));
    assert!(v["urdf_file"]
        .as_str()
        .unwrap()
        .ends_with("my_arm.urdf.xacro"));
    let srdf = std::fs::read_to_string(root().join("urdf/gmp_arm.srdf")).unwrap();
    assert_eq!(v["srdf"].as_str(), Some(srdf.as_str()));
    // With what `gmp info` says of the package (the launch file reads its point cloud
    // topics from here).
    assert_eq!(v["moveit_config"]["found_by"], ".setup_assistant");
    assert!(v["moveit_config"]["point_cloud_topics"].is_array());

    let (code, v, err) = gmp(&["controllers", "--moveit-config", c], Some(&xacro));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["controllers"][0]["name"], "arm_controller");
    assert_eq!(v["controllers"][0]["action_ns"], "follow_joint_trajectory");
    assert_eq!(v["groups"][0]["controllers"][0], "arm_controller");
    assert_eq!(v["unknown_joints"].as_array().map(Vec::len), Some(0));
    // Where mock controllers would start: 0 within every joint's limits ...
    assert_eq!(
        v["controllers"][0]["initial_positions"],
        serde_json::json!([0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    );
    // ... or the package's initial_positions.yaml.
    write(
        &cfg.join("config/initial_positions.yaml"),
        "initial_positions:\n  shoulder_pan_joint: -2.8\n  elbow_joint: 0.8\n",
    );
    let (code, v, err) = gmp(&["controllers", "--moveit-config", c], Some(&xacro));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        v["controllers"][0]["initial_positions"],
        serde_json::json!([-2.8, 0.0, 0.8, 0.0, 0.0, 0.0])
    );
    write(
        &cfg.join("config/initial_positions.yaml"),
        "initial_positions:\n  elbow_joint: wide\n",
    );
    let (code, _, err) = gmp(&["controllers", "--moveit-config", c], Some(&xacro));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("initial_positions.elbow_joint"), "{err}");
    std::fs::remove_file(cfg.join("config/initial_positions.yaml")).unwrap();

    // No xacro program: refused, naming the file and what to install.
    let (code, _, err) = gmp(
        &["info", "--moveit-config", c],
        Some(&ws.path().join("missing_xacro")),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("my_arm.urdf.xacro") && err.contains("install xacro"),
        "{err}"
    );

    // A xacro file given to --urdf and --srdf is expanded too.
    let xacro_file = ws.path().join("src/arm_description/urdf/my_arm.urdf.xacro");
    let (code, v, err) = gmp(
        &["info", "--urdf", xacro_file.to_str().unwrap()],
        Some(&xacro),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["joints"].as_array().map(Vec::len), Some(7), "{v}");
    let recorded = std::fs::read_to_string(ws.path().join("args.txt")).unwrap();
    assert_eq!(recorded.trim(), xacro_file.display().to_string());

    // Neither --urdf nor --moveit-config; an unknown package.
    let (code, _, err) = gmp(&["info"], None);
    assert_ne!(code, 0);
    assert!(
        err.contains("--urdf") || err.contains("moveit-config"),
        "{err}"
    );
    let (code, _, err) = gmp(&["info", "--moveit-config", "nope_moveit_config"], None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nope_moveit_config"), "{err}");
}

#[test]
fn meshes_of_a_source_workspace_resolve_through_its_packages() {
    let ws = tempfile::tempdir().unwrap();
    let desc = ws.path().join("src/my_cell_description");
    write(
        &desc.join("package.xml"),
        &package_xml("my_cell_description"),
    );
    // A tetrahedron as ASCII STL.
    let stl = "solid t\n\
        facet normal 0 0 -1\n outer loop\n  vertex 0 0 0\n  vertex 0.1 0 0\n  vertex 0 0.1 0\n endloop\nendfacet\n\
        facet normal 0 -1 0\n outer loop\n  vertex 0 0 0\n  vertex 0 0 0.1\n  vertex 0.1 0 0\n endloop\nendfacet\n\
        facet normal -1 0 0\n outer loop\n  vertex 0 0 0\n  vertex 0 0.1 0\n  vertex 0 0 0.1\n endloop\nendfacet\n\
        facet normal 1 1 1\n outer loop\n  vertex 0.1 0 0\n  vertex 0 0 0.1\n  vertex 0 0.1 0\n endloop\nendfacet\n\
        endsolid t\n";
    write(&desc.join("meshes/link.stl"), stl);
    write(
        &desc.join("urdf/cell.urdf"),
        "<robot name=\"cell\">\n  <link name=\"base\"/>\n  <link name=\"arm\">\n    <collision>\n      \
         <geometry><mesh filename=\"package://my_cell_description/meshes/link.stl\"/></geometry>\n    \
         </collision>\n  </link>\n  <joint name=\"j1\" type=\"revolute\">\n    <parent link=\"base\"/>\n    \
         <child link=\"arm\"/>\n    <axis xyz=\"0 0 1\"/>\n    <limit lower=\"-1\" upper=\"1\" effort=\"1\" \
         velocity=\"1\"/>\n  </joint>\n</robot>\n",
    );
    let cfg_dir = ws.path().join("src/cell_moveit_config");
    write(
        &cfg_dir.join(".setup_assistant"),
        "moveit_setup_assistant_config:\n  urdf:\n    package: my_cell_description\n    \
         relative_path: urdf/cell.urdf\n  srdf:\n    relative_path: config/cell.srdf\n",
    );
    write(
        &cfg_dir.join("config/cell.srdf"),
        "<robot name=\"cell\">\n  <group name=\"arm\"><joint name=\"j1\"/></group>\n</robot>\n",
    );
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert_eq!(cfg.robot_name, "cell");
    let robot = cfg.load_robot(&LoadOptions::default()).unwrap();
    assert_eq!(robot.bodies.len(), 1);
    assert_eq!(robot.bodies[0].polytope.vertices.len(), 4);
    // Without the package's folder to search, the mesh is not found.
    let err =
        RobotModel::from_urdf_file(&desc.join("urdf/cell.urdf"), None, &LoadOptions::default())
            .unwrap_err()
            .to_string();
    assert!(
        err.contains("package://my_cell_description/meshes/link.stl"),
        "{err}"
    );
}

#[test]
fn point_cloud_sensors_of_sensors_3d_are_read() {
    let ws = tempfile::tempdir().unwrap();
    let cfg_dir = workspace(ws.path(), "urdf/my_arm.urdf", "");
    let sensors = cfg_dir.join("config/sensors_3d.yaml");
    // Sensors by name (the Setup Assistant's layout); a depth image sensor is left out.
    write(
        &sensors,
        "sensors:\n  - wrist_camera\n  - head_depth\n  - cell_camera\n\
         wrist_camera:\n  sensor_plugin: occupancy_map_monitor/PointCloudOctomapUpdater\n  \
         point_cloud_topic: /wrist_camera/depth/points\n  max_range: 2.0\n\
         head_depth:\n  sensor_plugin: occupancy_map_monitor/DepthImageOctomapUpdater\n  \
         image_topic: /head/depth\n\
         cell_camera:\n  sensor_plugin: occupancy_map_monitor/PointCloudOctomapUpdater\n  \
         point_cloud_topic: /cell/points\n",
    );
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert_eq!(
        cfg.point_cloud_topics().unwrap(),
        vec![
            "/wrist_camera/depth/points".to_string(),
            "/cell/points".into()
        ]
    );
    // Sensors as mappings (older files).
    write(
        &sensors,
        "sensors:\n  - sensor_plugin: occupancy_map_monitor/PointCloudOctomapUpdater\n    \
         point_cloud_topic: /camera/points\n",
    );
    assert_eq!(
        cfg.point_cloud_topics().unwrap(),
        vec!["/camera/points".to_string()]
    );
    // Broken files are named with the key.
    for (text, want) in [
        ("sensors:\n  - ghost\n", "'ghost', which has no entry"),
        (
            "sensors: [c]\nc:\n  sensor_plugin: occupancy_map_monitor/PointCloudOctomapUpdater\n",
            "c.point_cloud_topic is missing",
        ),
        ("sensors: 3\n", "sensors must be a list"),
    ] {
        write(&sensors, text);
        let msg = cfg.point_cloud_topics().unwrap_err().to_string();
        assert!(
            msg.contains(want) && msg.contains("sensors_3d.yaml"),
            "{text}: {msg}"
        );
    }
    // gmp info shows the topics.
    write(
        &sensors,
        "sensors: [c]\nc:\n  sensor_plugin: occupancy_map_monitor/PointCloudOctomapUpdater\n  \
         point_cloud_topic: /c/points\n",
    );
    let (code, v, err) = gmp(
        &["info", "--moveit-config", cfg_dir.to_str().unwrap()],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["moveit_config"]["point_cloud_topics"][0], "/c/points");
    // No file: none.
    std::fs::remove_file(&sensors).unwrap();
    let cfg = MoveItConfig::locate_in(cfg_dir.to_str().unwrap(), &[]).unwrap();
    assert!(cfg.point_cloud_topics().unwrap().is_empty());
}

#[test]
fn ompl_planning_yaml_gives_planner_configs_and_group_defaults() {
    let ws = tempfile::tempdir().unwrap();
    let cfg = workspace(ws.path(), "urdf/my_arm.urdf", "");
    let ompl = cfg.join("config/ompl_planning.yaml");
    write(
        &ompl,
        "planning_plugins: [ompl_interface/OMPLPlanner]
planner_configs:
  RRTConnectkConfigDefault: {type: geometric::RRTConnect, range: 0.0}
  DenseRoadmap: {type: geometric::PRM, max_nearest_neighbors: 6}
  SBLkConfigDefault: {type: geometric::SBL}
arm:
  default_planner_config: DenseRoadmap
  planner_configs: [RRTConnectkConfigDefault, DenseRoadmap, SBLkConfigDefault]
  longest_valid_segment_fraction: 0.0005
",
    );
    let located = MoveItConfig::locate_in(cfg.to_str().unwrap(), &[]).unwrap();
    assert_eq!(located.ompl_planning.as_deref(), Some(ompl.as_path()));
    // Read now, so no longer listed as not read.
    assert!(
        located.unread_files().is_empty(),
        "{:?}",
        located.unread_files()
    );
    let robot = located.load_robot(&LoadOptions::default()).unwrap();
    assert_eq!(robot.ompl.configs.len(), 3);
    assert_eq!(
        robot.ompl.default_config("arm").map(|(n, _)| n),
        Some("DenseRoadmap")
    );

    let c = cfg.to_str().unwrap();
    let (code, v, err) = gmp(&["info", "--moveit-config", c], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        v["ompl_planning"]["groups"]["arm"]["default_planner_config"],
        "DenseRoadmap"
    );
    assert!(v["moveit_config"]["ompl_planning"]
        .as_str()
        .unwrap()
        .ends_with("ompl_planning.yaml"));

    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "--moveit-config",
            c,
            "--start",
            "home",
            "--goal",
            "ready",
            "--seed",
            "3",
        ];
        args.extend_from_slice(extra);
        gmp(&args, None)
    };
    // No --planner: the group's default configuration (PRM), and motions checked at the
    // fraction's step, finer than --resolution's default 0.02.
    let (code, v, err) = plan(&[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["planner"], "prm", "{v}");
    assert_eq!(v["planner_config"], "DenseRoadmap");
    let resolution = v["resolution"].as_f64().unwrap();
    assert!(resolution < 0.02 && resolution > 0.0, "{resolution}");
    // A configuration named by --planner; an OMPL id the file does not name plans as before.
    let (code, v, err) = plan(&["--planner", "RRTConnectkConfigDefault"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (v["planner"].as_str(), v["planner_config"].as_str()),
        (Some("rrt_connect"), Some("RRTConnectkConfigDefault"))
    );
    let (code, v, err) = plan(&["--planner", "rrt"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["planner"], "rrt");
    assert!(v["planner_config"].is_null());
    // A coarser step than --resolution is never taken.
    let (code, v, err) = plan(&["--planner", "rrt", "--resolution", "0.0001"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["resolution"], 0.0001);
    // A configuration of a planner not planned here is refused, naming it and the file.
    let (code, _, err) = plan(&["--planner", "SBLkConfigDefault"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("SBLkConfigDefault")
            && err.contains("geometric::SBL")
            && err.contains("ompl_planning.yaml"),
        "{err}"
    );
    // A default naming no configuration is left out with a warning (the robot loads); a bad
    // value is named with its key, and the robot is not loaded from it.
    write(
        &ompl,
        "planner_configs:\n  A: {type: geometric::RRT}\narm:\n  default_planner_config: B\n",
    );
    let (code, v, err) = gmp(&["info", "--moveit-config", c], None);
    assert_eq!(code, 0, "{err}");
    assert!(v["ompl_planning"]["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("arm.default_planner_config: 'B'"));
    write(
        &ompl,
        "planner_configs:\n  A: {type: geometric::RRT, goal_bias: 1.5}\n",
    );
    let (code, _, err) = gmp(&["info", "--moveit-config", c], None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ompl_planning.yaml") && err.contains("planner_configs.A: goal_bias"),
        "{err}"
    );
}

#[test]
fn pilz_cartesian_limits_bound_the_packages_cartesian_paths() {
    let ws = tempfile::tempdir().unwrap();
    let cfg = workspace(ws.path(), "urdf/my_arm.urdf", "");
    write(
        &cfg.join("config/pilz_cartesian_limits.yaml"),
        "cartesian_limits:\n  max_trans_vel: 0.05\n  max_trans_acc: 2.25\n  max_trans_dec: -5\n  \
         max_rot_vel: 1.57\n",
    );
    let c = cfg.to_str().unwrap();
    let (code, v, err) = gmp(&["info", "--moveit-config", c], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["cartesian_limits"]["max_trans_vel"], 0.05);
    let located = MoveItConfig::locate_in(c, &[]).unwrap();
    assert!(
        located.summary().contains("Cartesian limits ")
            && located.summary().contains("pilz_cartesian_limits.yaml")
    );
    assert!(v["moveit_config"]["not_read"]
        .as_array()
        .unwrap()
        .is_empty());
    // 10 cm down from `ready`: the link moved keeps 0.05 m/s times the package's default
    // velocity scaling (0.5, its joint_limits.yaml).
    let robot = bundled_with_limits();
    let group = robot.default_group();
    let ready = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];
    let tip = gpu_motion_planner::robot::ik::default_tip_link(&robot, &group).unwrap();
    let at = robot
        .tree
        .forward_kinematics(&group.full_state(&robot.tree.neutral_state(), &ready))[tip]
        .translation
        .vector;
    let waypoints = format!("[[{}, {}, {}]]", at.x, at.y, at.z - 0.1);
    let (code, v, err) = gmp(
        &[
            "cartesian",
            "--moveit-config",
            c,
            "--start",
            "ready",
            "--waypoints",
            &waypoints,
            "--backend",
            "cpu",
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    // 10 cm at 2.5 cm/s: 4 s at least.
    assert!(v["duration"].as_f64().unwrap() >= 4.0, "{}", v["duration"]);
    assert_eq!(v["link_speed"]["limit"], 0.025, "{v}");
    assert_eq!(v["link_speed"]["angular_limit"], 0.785);
    assert!(v["link_speed"]["peak_after"].as_f64().unwrap() <= 0.025);
    write(
        &cfg.join("config/pilz_cartesian_limits.yaml"),
        "cartesian_limits:\n  max_trans_vel: 0\n",
    );
    let (code, _, err) = gmp(&["info", "--moveit-config", c], None);
    assert_eq!(code, 2);
    assert!(
        err.contains("pilz_cartesian_limits.yaml") && err.contains("max_trans_vel"),
        "{err}"
    );
}
