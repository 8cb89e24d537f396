//! Joint limits files (MoveIt's `joint_limits.yaml`): the limits the planners and the time
//! parameterization use, the default scaling, narrowed position limits, and bad files refused
//! by name without changing the robot.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::service::{names, request, GOAL, START};
use gpu_motion_planner::cli::demo::bundled;
use gpu_motion_planner::robot::{JointLimitsFile, RobotModel, DEFAULT_ACCELERATION_FACTOR};
use gpu_motion_planner::scene::Scene;
use gpu_motion_planner::service::{
    ErrorCategory, PlanningService, ServicePlanRequest, ServiceSettings,
};
use gpu_motion_planner::trajectory::Trajectory;
use serde_json::Value;

/// The bundled arm's joint limits file.
fn bundled_file() -> PathBuf {
    common::root().join("config/gmp_arm_joint_limits.yaml")
}

/// The bundled robot with `file` applied.
fn limited(file: &JointLimitsFile) -> (RobotModel, Scene) {
    let (mut robot, scene) = bundled().expect("bundled robot");
    robot
        .apply_joint_limits(file, "test")
        .expect("limits apply");
    (robot, scene)
}

fn settings(vel: f64, acc: f64) -> ServiceSettings {
    ServiceSettings {
        time_limit: 10.0,
        seed: 7,
        velocity_scaling: vel,
        acceleration_scaling: acc,
        ..ServiceSettings::default()
    }
}

/// The plan from START to GOAL of a service for `robot` in `scene` with `settings`.
fn start_to_goal(robot: RobotModel, scene: Scene, settings: ServiceSettings) -> Trajectory {
    let mut s = PlanningService::new(robot, scene, settings);
    s.plan(request(&s, &START, &GOAL)).expect("plan").trajectory
}

fn duration(t: &Trajectory) -> f64 {
    t.points.last().map_or(0.0, |p| p.time_from_start)
}

/// The largest ratio of |velocity| and of |acceleration| to `scale` times the limit, over
/// every point and joint.
fn peak_ratios(t: &Trajectory, vmax: &[f64], amax: &[f64], vs: f64, as_: f64) -> (f64, f64) {
    let mut peak = (0.0f64, 0.0f64);
    for p in &t.points {
        for j in 0..vmax.len() {
            peak.0 = peak.0.max(p.velocities[j].abs() / (vmax[j] * vs));
            peak.1 = peak.1.max(p.accelerations[j].abs() / (amax[j] * as_));
        }
    }
    peak
}

#[test]
fn the_bundled_file_sets_the_limits_the_group_plans_with() {
    let file = JointLimitsFile::read(&bundled_file()).expect("bundled file parses");
    let (plain, _) = bundled().expect("bundled robot");
    let before = plain.default_group().space;
    for (v, a) in before.max_velocity.iter().zip(&before.max_acceleration) {
        assert_eq!(*a, v * DEFAULT_ACCELERATION_FACTOR);
    }
    assert_eq!(plain.default_scaling.velocity, None);
    let (robot, _) = limited(&file);
    let space = robot.default_group().space;
    assert_eq!(space.max_acceleration, vec![3.0, 3.0, 4.0, 6.0, 6.0, 6.0]);
    assert_eq!(
        space.max_velocity, before.max_velocity,
        "the file repeats the URDF's"
    );
    assert_eq!(space.lower, before.lower);
    assert_eq!(space.continuous, before.continuous);
    assert_eq!(robot.default_scaling.velocity, Some(0.5));
    assert_eq!(robot.default_scaling.acceleration, Some(0.5));
}

#[test]
fn jerk_limits_of_the_file_make_the_service_trajectory_jerk_limited() {
    // The bundled file with a jerk limit on every joint (rad/s³).
    let text = std::fs::read_to_string(bundled_file()).expect("bundled file");
    let jerk = [12.0, 12.0, 16.0, 24.0, 24.0, 24.0];
    let mut with_jerk = text.clone();
    let (arm, _) = bundled().expect("bundled robot");
    for (name, j) in arm.default_group().space.names.iter().zip(jerk) {
        with_jerk = with_jerk.replace(
            &format!("  {name}:\n"),
            &format!("  {name}:\n    has_jerk_limits: true\n    max_jerk: {j}\n"),
        );
    }
    let file = JointLimitsFile::parse(&with_jerk, "jerk.yaml").expect("parses");
    let (robot, scene) = limited(&file);
    let space = robot.default_group().space;
    assert_eq!(space.max_jerk, jerk.to_vec());
    let plain_file = JointLimitsFile::parse(&text, "plain.yaml").expect("parses");
    let (plain_robot, _) = limited(&plain_file);
    assert!(plain_robot
        .default_group()
        .space
        .max_jerk
        .iter()
        .all(|j| j.is_infinite()));

    let smooth = start_to_goal(robot, scene.clone(), settings(1.0, 1.0));
    let plain = start_to_goal(plain_robot, scene, settings(1.0, 1.0));
    // The same path (the plans differ in timing only): the waypoints of both, at rest.
    let rests = |t: &Trajectory| -> Vec<Vec<f64>> {
        t.points
            .iter()
            .filter(|p| p.velocities.iter().all(|v| *v == 0.0))
            .map(|p| p.positions.clone())
            .collect()
    };
    assert_eq!(rests(&smooth), rests(&plain));
    let (v, a) = peak_ratios(
        &smooth,
        &space.max_velocity,
        &space.max_acceleration,
        1.0,
        1.0,
    );
    assert!(v <= 1.0 + 1e-9 && a <= 1.0 + 1e-9, "peaks {v} {a}");
    // The acceleration changes by at most the jerk limit per second between points, starts
    // and ends at zero; without jerk limits it jumps.
    let jerk_peak = |t: &Trajectory| {
        t.points
            .windows(2)
            .flat_map(|w| {
                let dt = w[1].time_from_start - w[0].time_from_start;
                (0..jerk.len()).map(move |j| {
                    (w[1].accelerations[j] - w[0].accelerations[j]).abs() / (jerk[j] * dt)
                })
            })
            .fold(0.0, f64::max)
    };
    let used = jerk_peak(&smooth);
    assert!(
        used <= 1.0 + 1e-6 && used > 0.9,
        "jerk at {used} of the limits"
    );
    assert!(jerk_peak(&plain) > 5.0);
    for end in [smooth.points.first(), smooth.points.last()] {
        let end = end.expect("points");
        assert!(end.accelerations.iter().all(|a| a.abs() < 1e-9), "{end:?}");
    }
    assert!(duration(&smooth) > duration(&plain));
}

#[test]
fn the_service_times_with_the_file_and_its_default_scaling_unless_told_otherwise() {
    let file = JointLimitsFile::read(&bundled_file()).expect("bundled file parses");
    let (robot, scene) = limited(&file);
    let space = robot.default_group().space;
    let (plain_robot, plain_scene) = bundled().expect("bundled robot");

    // No file, settings 0: scaling 1 and accelerations of 2 x the velocity limits.
    let mut plain = PlanningService::new(plain_robot, plain_scene, settings(0.0, 0.0));
    let base = plain.plan(request(&plain, &START, &GOAL)).expect("plan");
    // The file, settings 0: its limits at its default scaling 0.5.
    let mut s = PlanningService::new(robot.clone(), scene.clone(), settings(0.0, 0.0));
    let slow = s.plan(request(&s, &START, &GOAL)).expect("plan");
    assert_eq!(
        slow.path, base.path,
        "the limits change the timing, not the path"
    );
    let (v, a) = peak_ratios(
        &slow.trajectory,
        &space.max_velocity,
        &space.max_acceleration,
        0.5,
        0.5,
    );
    assert!(v <= 1.0 + 1e-9 && a <= 1.0 + 1e-9, "peaks {v} {a}");
    assert!(a > 0.99, "the file's acceleration limit is reached: {a}");
    assert!(duration(&slow.trajectory) > 1.3 * duration(&base.trajectory));

    // Settings 1 win over the file's default scaling; the file's accelerations still apply.
    let mut full = PlanningService::new(robot.clone(), scene.clone(), settings(1.0, 1.0));
    let fast = full.plan(request(&full, &START, &GOAL)).expect("plan");
    let (v, a) = peak_ratios(
        &fast.trajectory,
        &space.max_velocity,
        &space.max_acceleration,
        1.0,
        1.0,
    );
    assert!(
        v <= 1.0 + 1e-9 && a <= 1.0 + 1e-9 && a > 0.99,
        "peaks {v} {a}"
    );
    assert!(duration(&fast.trajectory) < duration(&slow.trajectory));

    // A request's own scaling wins over both.
    let mut req = request(&s, &START, &GOAL);
    req.vel_scale = Some(0.2);
    req.acc_scale = Some(0.2);
    let slowest = s.plan(req).expect("plan");
    let (v, a) = peak_ratios(
        &slowest.trajectory,
        &space.max_velocity,
        &space.max_acceleration,
        0.2,
        0.2,
    );
    assert!(v <= 1.0 + 1e-9 && a <= 1.0 + 1e-9, "peaks {v} {a}");
    assert!(duration(&slowest.trajectory) > duration(&slow.trajectory));
}

#[test]
fn narrowed_and_bounded_joints_are_planned_within_their_new_limits() {
    let file = JointLimitsFile::parse(
        "joint_limits:\n  shoulder_pan_joint:\n    has_position_limits: true\n    \
         min_position: -3.0\n    max_position: -1.0\n  wrist_3_joint:\n    \
         has_position_limits: true\n    min_position: -0.5\n    max_position: 0.5\n",
        "narrow.yaml",
    )
    .expect("parses");
    let (robot, scene) = limited(&file);
    let space = robot.default_group().space;
    assert_eq!((space.lower[0], space.upper[0]), (-3.0, -1.0));
    assert_eq!((space.lower[5], space.upper[5]), (-0.5, 0.5));
    assert!(
        !space.continuous[5],
        "a continuous joint given position limits is bounded"
    );
    let mut s = PlanningService::new(robot, scene, settings(0.0, 0.0));
    for planner in ["rrt_connect", "prm", "rrt"] {
        let mut req = request(&s, &START, &GOAL);
        req.planner = Some(planner.into());
        let res = s.plan(req).expect("plan");
        for p in &res.trajectory.points {
            for j in 0..6 {
                assert!(
                    p.positions[j] >= space.lower[j] - 1e-9
                        && p.positions[j] <= space.upper[j] + 1e-9,
                    "{planner}: joint {j} at {} outside [{}, {}]",
                    p.positions[j],
                    space.lower[j],
                    space.upper[j]
                );
            }
        }
    }
    // A goal outside the narrowed range is refused naming the joint.
    let mut goal = GOAL;
    goal[0] = 0.0;
    let e = s.plan(request(&s, &START, &goal)).unwrap_err();
    assert_eq!(e.category(), ErrorCategory::InvalidGoal, "{e}");
    assert!(e.to_string().contains("shoulder_pan_joint"), "{e}");
    let req = ServicePlanRequest {
        start: Some((names(&s), START.to_vec())),
        goal: (names(&s), {
            let mut g = GOAL;
            g[5] = 1.0;
            g.to_vec()
        }),
        ..Default::default()
    };
    let e = s.plan(req).unwrap_err();
    assert!(e.to_string().contains("wrist_3_joint"), "{e}");
}

#[test]
fn bad_files_are_refused_by_name_and_leave_the_robot_as_it_was() {
    let (mut robot, _) = bundled().expect("bundled robot");
    let original: Vec<_> = robot
        .tree
        .joints
        .iter()
        .map(|j| (j.kind, j.limits))
        .collect();
    let cases: &[(&str, &[&str])] = &[
        ("joint_limits:\n  no_such_joint: {}\n", &["unknown joint 'no_such_joint'"]),
        ("joint_limits:\n  tool_joint: {}\n", &["'tool_joint'", "fixed"]),
        (
            "joint_limits:\n  elbow_joint: {has_position_limits: true, min_position: -3, max_position: 1}\n",
            &["'elbow_joint'", "outside the URDF", "-2.6"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_position_limits: true, min_position: 1}\n",
            &["'elbow_joint'", "max_position"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_position_limits: true, min_position: 1, max_position: 0.5}\n",
            &["'elbow_joint'", "min_position < max_position"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_velocity_limits: true}\n",
            &["'elbow_joint'", "has_velocity_limits is true but max_velocity is missing"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_acceleration_limits: true, max_acceleration: -1}\n",
            &["'elbow_joint'", "max_acceleration -1"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_acceleration_limits: true, max_acceleration: .nan}\n",
            &["'elbow_joint'", "max_acceleration NaN"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_jerk_limits: true, max_jerk: -1}\n",
            &["'elbow_joint'", "max_jerk -1"],
        ),
        (
            "joint_limits:\n  elbow_joint: {has_jerk_limits: true}\n",
            &["'elbow_joint'", "has_jerk_limits is true but max_jerk is missing"],
        ),
        ("joint_limits:\n  elbow_joint: {max_accel: 2}\n", &["max_accel"]),
        ("joint_limits:\n  elbow_joint: {max_velocity: fast}\n", &["max_velocity"]),
        ("default_velocity_scaling_factor: 0\n", &["default_velocity_scaling_factor"]),
        ("joint_limit: {}\n", &["joint_limit"]),
    ];
    for (text, words) in cases {
        // Valid entries before the bad one must not be applied either.
        let text = format!(
            "default_velocity_scaling_factor: 0.3\n{}",
            text.replace(
                "joint_limits:\n",
                "joint_limits:\n  shoulder_lift_joint: {has_velocity_limits: true, max_velocity: 0.5}\n"
            )
        );
        let e = JointLimitsFile::parse(&text, "bad.yaml")
            .and_then(|f| robot.apply_joint_limits(&f, "bad.yaml"))
            .expect_err(&text)
            .to_string();
        assert!(e.contains("bad.yaml"), "{e}");
        for w in *words {
            assert!(e.contains(w), "{text}: '{e}' lacks '{w}'");
        }
        let now: Vec<_> = robot
            .tree
            .joints
            .iter()
            .map(|j| (j.kind, j.limits))
            .collect();
        assert_eq!(now, original, "{text}");
        assert_eq!(robot.default_scaling.velocity, None);
    }
}

fn gmp(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(args)
        .output()
        .expect("gmp runs")
}

fn plan_cli(extra: &[&str]) -> std::process::Output {
    let root = common::root();
    let mut args: Vec<String> = vec![
        "plan".into(),
        "--urdf".into(),
        root.join("urdf/gmp_arm.urdf").display().to_string(),
        "--srdf".into(),
        root.join("urdf/gmp_arm.srdf").display().to_string(),
        "--scene".into(),
        root.join("config/default_scene.yaml").display().to_string(),
        "--backend".into(),
        "cpu".into(),
        "--seed".into(),
        "3".into(),
        "--start".into(),
        serde_json::to_string(&START).unwrap(),
        "--goal".into(),
        serde_json::to_string(&GOAL).unwrap(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    gmp(&args)
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn cli_duration(v: &Value) -> f64 {
    v["points"]
        .as_array()
        .and_then(|p| p.last())
        .and_then(|p| p["time_from_start"].as_f64())
        .expect("points")
}

#[test]
fn gmp_plan_and_info_take_a_joint_limits_file() {
    let file = bundled_file().display().to_string();
    let plain = json_of(&plan_cli(&[]));
    let limited = json_of(&plan_cli(&["--joint-limits", &file]));
    assert_eq!(plain["path"], limited["path"]);
    assert!(cli_duration(&limited) > 1.3 * cli_duration(&plain));
    let full = json_of(&plan_cli(&[
        "--joint-limits",
        &file,
        "--velocity-scaling",
        "1",
        "--acceleration-scaling",
        "1",
    ]));
    assert!(cli_duration(&full) < cli_duration(&limited));
    // Slower accelerations than the default 2 x velocity: slower than without the file.
    assert!(cli_duration(&full) > cli_duration(&plain));

    let out = plan_cli(&["--joint-limits", "/no/such/limits.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/limits.yaml"));
    let out = plan_cli(&["--joint-limits", &file, "--velocity-scaling", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--velocity-scaling"));

    let info = json_of(&gmp(&[
        "info".into(),
        "--urdf".into(),
        common::root()
            .join("urdf/gmp_arm.urdf")
            .display()
            .to_string(),
        "--joint-limits".into(),
        file,
    ]));
    let elbow = info["joints"]
        .as_array()
        .and_then(|j| j.iter().find(|j| j["name"] == "elbow_joint"))
        .expect("elbow");
    assert_eq!(elbow["acceleration"], 4.0);
    assert_eq!(info["default_scaling"]["velocity"], 0.5);
}
