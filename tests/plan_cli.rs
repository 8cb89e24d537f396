//! The `gmp plan` and `gmp demo` commands, run as the built binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gpu_motion_planner::cli::demo::DEMO_QUERIES;
use serde_json::{json, Value};

const ARM_JOINTS: [&str; 6] = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn gmp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(args)
        .output()
        .expect("gmp runs")
}

/// `gmp plan` on the bundled robot (CPU backend) in scene file `scene` from `start` to `goal`
/// with `seed`.
fn plan_in_scene(scene: &Path, start: &[f64], goal: &[f64], seed: &str) -> Output {
    let urdf = root().join("urdf/gmp_arm.urdf");
    let srdf = root().join("urdf/gmp_arm.srdf");
    let (s, g) = (json_list(start), json_list(goal));
    gmp(&[
        "plan",
        "--urdf",
        urdf.to_str().unwrap(),
        "--srdf",
        srdf.to_str().unwrap(),
        "--scene",
        scene.to_str().unwrap(),
        "--backend",
        "cpu",
        "--start",
        &s,
        "--goal",
        &g,
        "--seed",
        seed,
    ])
}

fn json_list(q: &[f64]) -> String {
    serde_json::to_string(q).unwrap()
}

/// `gmp plan` on the bundled robot and scene with the CPU backend, then `args`.
fn bundled(args: &[&str]) -> Output {
    bundled_command("plan", args)
}

/// `gmp COMMAND` on the bundled robot and scene with the CPU backend, then `args`.
fn bundled_command(command: &str, args: &[&str]) -> Output {
    let urdf = root().join("urdf/gmp_arm.urdf");
    let srdf = root().join("urdf/gmp_arm.srdf");
    let scene = root().join("config/default_scene.yaml");
    let mut all = vec![
        command,
        "--urdf",
        urdf.to_str().unwrap(),
        "--srdf",
        srdf.to_str().unwrap(),
        "--scene",
        scene.to_str().unwrap(),
        "--backend",
        "cpu",
    ];
    all.extend_from_slice(args);
    gmp(&all)
}

fn bundled_plan(start: &[f64], goal: &[f64], extra: &[&str]) -> Output {
    let (s, g) = (json_list(start), json_list(goal));
    let mut args = vec!["--start", &s, "--goal", &g];
    args.extend_from_slice(extra);
    bundled(&args)
}

/// `gmp plan` on the bundled robot with `extra`, which must be refused as bad input: exit
/// status 2, nothing on stdout. Returns the error text (stderr).
fn refused(start: &[f64], goal: &[f64], extra: &[&str]) -> String {
    let out = bundled_plan(start, goal, extra);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
    assert!(out.stdout.is_empty(), "{extra:?}: output on stdout");
    err
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn assert_trajectory(v: &Value, joints: &[&str], start: &[f64]) {
    assert_eq!(v["success"], true);
    let names: Vec<&str> = v["joint_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names, joints);
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 2);
    let mut last = -1.0;
    for p in points {
        let t = p["time_from_start"].as_f64().unwrap();
        assert!(t > last, "time_from_start must increase: {t} after {last}");
        last = t;
        for key in ["positions", "velocities", "accelerations"] {
            assert_eq!(p[key].as_array().unwrap().len(), joints.len(), "{key}");
        }
    }
    assert_eq!(points[0]["time_from_start"], 0.0);
    let first: Vec<f64> = points[0]["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(first, start);
    let stats = &v["stats"];
    assert!(stats["planning_time_s"].as_f64().unwrap() >= 0.0);
    assert!(stats["collision_checks"].as_u64().unwrap() > 0);
    assert!(
        stats["path_length_after"].as_f64().unwrap()
            <= stats["path_length_before"].as_f64().unwrap() + 1e-9
    );
}

#[test]
fn plan_on_the_bundled_robot_prints_a_trajectory() {
    let (_, start, goal) = DEMO_QUERIES[0];
    for planner in ["rrt_connect", "prm"] {
        let out = bundled_plan(&start, &goal, &["--planner", planner, "--seed", "3"]);
        assert!(
            out.status.success(),
            "{planner}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = stdout_json(&out);
        assert_eq!(v["planner"], planner);
        assert_trajectory(&v, &ARM_JOINTS, &start);
    }
}

/// `--no-dynamic-domain` and `--no-balance` (shared with `gmp bench mbm`) plan plain
/// RRT-Connect: a valid trajectory, the same on every run for a seed.
#[test]
fn plan_without_dynamic_domains_or_balance() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let opts = ["--seed", "4", "--no-dynamic-domain", "--no-balance"];
    let runs: Vec<Value> = (0..2)
        .map(|_| {
            let out = bundled_plan(&start, &goal, &opts);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout_json(&out)
        })
        .collect();
    assert_trajectory(&runs[0], &ARM_JOINTS, &start);
    assert_eq!(runs[0]["path"], runs[1]["path"]);
}

#[test]
fn plan_is_deterministic_for_a_seed() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let runs: Vec<Value> = (0..2)
        .map(|_| stdout_json(&bundled_plan(&start, &goal, &["--seed", "5"])))
        .collect();
    assert_eq!(runs[0]["points"], runs[1]["points"]);
    assert_eq!(runs[0]["path"], runs[1]["path"]);
}

#[test]
fn velocity_scaling_slows_the_trajectory() {
    let (_, start, goal) = DEMO_QUERIES[1];
    let full = stdout_json(&bundled_plan(&start, &goal, &["--seed", "2"]));
    let slow = stdout_json(&bundled_plan(
        &start,
        &goal,
        &[
            "--seed",
            "2",
            "--velocity-scaling",
            "0.25",
            "--acceleration-scaling",
            "0.25",
        ],
    ));
    assert_eq!(full["path"], slow["path"], "same seed, same path");
    assert!(slow["duration"].as_f64().unwrap() > 1.5 * full["duration"].as_f64().unwrap());
}

#[test]
fn a_goal_in_collision_is_a_clear_error() {
    let (_, start, _) = DEMO_QUERIES[0];
    // Shoulder lifted 2 rad: the upper arm goes down through the table.
    let err = refused(&start, &[0.0, 2.0, 0.0, 0.0, 0.0, 0.0], &[]);
    assert!(err.contains("goal") && err.contains("collision"), "{err}");
}

#[test]
fn bad_start_text_names_the_option() {
    let err = refused(&[0.0; 5], &[0.0; 6], &[]);
    assert!(err.contains("--start") && err.contains("6 joints"), "{err}");
}

#[test]
fn no_path_within_the_time_limit_exits_1_with_success_false() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let out = bundled_plan(&start, &goal, &["--time-limit", "0.000001"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["success"], false);
    assert!(v["error"].as_str().unwrap().contains("no path"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no path"));
}

#[test]
fn plan_from_a_moveit_request() {
    let Some(data) = common::mbm_or_skip("plan_from_a_moveit_request") else {
        return;
    };
    let (v, req) = plan_mbm_request(&data, "panda", "table_pick", 1, &[]);
    let joints: Vec<String> = (1..=7).map(|i| format!("panda_joint{i}")).collect();
    let joint_refs: Vec<&str> = joints.iter().map(String::as_str).collect();
    let start: Vec<f64> = joints.iter().map(|j| req.start[j]).collect();
    assert_eq!(v["group"], "panda_arm");
    assert_trajectory(&v, &joint_refs, &start);
    let last = v["points"].as_array().unwrap().last().unwrap()["positions"].clone();
    for (k, j) in joints.iter().enumerate() {
        let want = req.goal.iter().find(|(n, _)| n == j).unwrap().1;
        assert!((last[k].as_f64().unwrap() - want).abs() < 1e-9, "{j}");
    }
}

/// `gmp plan --scene ... --request ...` on MBM problem `index` of `scene` for `robot` on the
/// CPU (with `extra` arguments): the trajectory JSON and the request it planned.
fn plan_mbm_request(
    data: &std::path::Path,
    robot: &str,
    scene: &str,
    index: usize,
    extra: &[&str],
) -> (serde_json::Value, gpu_motion_planner::mbm::Request) {
    let problems: PathBuf = gpu_motion_planner::mbm::unpacked_problems(data, robot)
        .unwrap()
        .join(format!("problems/{scene}_{robot}"));
    let scene_file = problems.join(format!("scene{index:04}.yaml"));
    let request_file = problems.join(format!("request{index:04}.yaml"));
    let urdf = data.join(format!("{robot}/{robot}.urdf"));
    let srdf = data.join(format!("{robot}/{robot}.srdf"));
    let mut args = vec![
        "plan",
        "--urdf",
        urdf.to_str().unwrap(),
        "--srdf",
        srdf.to_str().unwrap(),
        "--scene",
        scene_file.to_str().unwrap(),
        "--request",
        request_file.to_str().unwrap(),
        "--backend",
        "cpu",
    ];
    args.extend_from_slice(extra);
    let out = gmp(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let req = gpu_motion_planner::mbm::read_request(&request_file).unwrap();
    (stdout_json(&out), req)
}

/// Fetch's goal in MBM box #2 has wrist_roll_joint at -PI, 2.7e-6 past the URDF's -3.14159:
/// `--request` moves it onto the limit instead of rejecting the goal.
#[test]
fn plan_from_a_fetch_request_with_a_goal_on_a_rounded_limit() {
    let Some(data) =
        common::mbm_or_skip("plan_from_a_fetch_request_with_a_goal_on_a_rounded_limit")
    else {
        return;
    };
    let (v, req) = plan_mbm_request(&data, "fetch", "box", 2, &["--time-limit", "60"]);
    let names: Vec<String> = v["joint_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let last = v["points"].as_array().unwrap().last().unwrap()["positions"].clone();
    for (k, j) in names.iter().enumerate() {
        let want = req.goal.iter().find(|(n, _)| n == j).unwrap().1;
        let got = last[k].as_f64().unwrap();
        assert!(
            (got - want).abs() <= gpu_motion_planner::robot::LIMIT_TOLERANCE,
            "{j}"
        );
        if j == "wrist_roll_joint" {
            // The URDF's lower limit (PI rounded to five decimals), not -PI.
            let urdf_lower: f64 = "-3.14159".parse().unwrap();
            assert_eq!(got, urdf_lower, "snapped onto the URDF limit");
        }
    }
}

#[test]
fn demo_writes_a_png() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("demo.png");
    let out = gmp(&[
        "demo",
        "--backend",
        "cpu",
        "--configs",
        "200",
        "--motions",
        "20",
        "--png",
        png.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let planning = v["planning"].as_array().unwrap();
    assert_eq!(planning.len(), 2 * DEMO_QUERIES.len());
    assert!(
        planning.iter().all(|p| p["success"] == true),
        "{planning:?}"
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (1200, 620));
    assert_eq!(v["picture"]["width"], 1200);
    // No temporary file is left next to the picture.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn demo_queries_are_collision_free() {
    use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker};
    let (robot, scene) = gpu_motion_planner::cli::demo::bundled().unwrap();
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let c = CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    for (name, start, goal) in DEMO_QUERIES {
        assert!(c.check_config(&start).unwrap(), "{name} start");
        assert!(c.check_config(&goal).unwrap(), "{name} goal");
        assert!(group.space.within_limits(&start) && group.space.within_limits(&goal));
    }
}

#[test]
fn parallel_attempts_from_the_command_line() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let runs: Vec<Value> = (0..2)
        .map(|_| {
            stdout_json(&bundled_plan(
                &start,
                &goal,
                &["--seed", "5", "--attempts", "4"],
            ))
        })
        .collect();
    assert_trajectory(&runs[0], &ARM_JOINTS, &start);
    // 1 when attempt 0 solved the query within its solo work, 4 when the others ran too.
    let ran = runs[0]["stats"]["attempts"].as_u64();
    assert!(ran == Some(1) || ran == Some(4), "{ran:?}");
    assert_eq!(runs[0]["points"], runs[1]["points"]);
    assert_eq!(
        runs[0]["stats"]["winning_attempt"],
        runs[1]["stats"]["winning_attempt"]
    );
    let err = refused(&start, &goal, &["--attempts", "0"]);
    assert!(err.contains("attempts"), "{err}");
}

#[test]
fn batch_size_defaults_to_the_suited_one_and_can_be_set() {
    let (_, start, goal) = DEMO_QUERIES[0];
    // RRT-Connect (the default planner) on the CPU: one sample per iteration.
    let v = stdout_json(&bundled_plan(&start, &goal, &["--seed", "3"]));
    assert_trajectory(&v, &ARM_JOINTS, &start);
    assert_eq!(v["stats"]["batch_size"], 1);
    assert!(
        v["stats"]["device_time_s"].is_null(),
        "a CPU plan has no device time"
    );
    let v = stdout_json(&bundled_plan(
        &start,
        &goal,
        &["--seed", "3", "--batch-size", "16"],
    ));
    assert_trajectory(&v, &ARM_JOINTS, &start);
    assert_eq!(v["stats"]["batch_size"], 16);
    let err = refused(&start, &goal, &["--batch-size", "0"]);
    assert!(err.contains("batch_size"), "{err}");
}

/// `--range` and `--dd-radius` reach the planner: each run is deterministic, a much shorter
/// range needs more tree vertices for the same query, and bad values are named.
#[test]
fn range_and_dd_radius_from_the_command_line() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let run = |extra: &[&str]| {
        let mut args = vec!["--seed", "4"];
        args.extend_from_slice(extra);
        let v = stdout_json(&bundled_plan(&start, &goal, &args));
        assert_trajectory(&v, &ARM_JOINTS, &start);
        v
    };
    let short = run(&["--range", "0.05", "--dd-radius", "2.5"]);
    let again = run(&["--range", "0.05", "--dd-radius", "2.5"]);
    assert_eq!(short["path"], again["path"], "deterministic for the seed");
    let long = run(&["--range", "1.0", "--dd-radius", "2.5"]);
    let vertices = |v: &Value| v["stats"]["roadmap_vertices"].as_u64().expect("vertices");
    assert!(
        vertices(&short) > vertices(&long),
        "range 0.05: {} vertices, range 1: {}",
        vertices(&short),
        vertices(&long)
    );
    for (opt, bad, name) in [
        ("--range", "0", "range"),
        ("--range", "-1", "range"),
        ("--dd-radius", "0", "dd_radius"),
        ("--dd-radius", "inf", "dd_radius"),
    ] {
        let arg = format!("{opt}={bad}");
        let err = refused(&start, &goal, &[&arg]);
        assert!(err.contains(name), "{opt} {bad}: {err}");
    }
}

#[test]
fn on_device_without_a_gpu_backend_is_a_clear_error() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let err = refused(&start, &goal, &["--on-device"]);
    assert!(
        err.contains("on_device") && err.contains("GPU") && err.contains("cpu"),
        "{err}"
    );
    let err = refused(&start, &goal, &["--on-device", "--planner", "prm"]);
    assert!(err.contains("only rrt_connect"), "{err}");
}

/// A resolution so fine that one motion would take more than 2^20 configurations per pass is
/// refused before anything runs on a device (the launch does not look at the clock inside a
/// motion check), with an error naming the resolution; a GPU or not makes no difference.
#[test]
fn on_device_with_a_resolution_too_fine_is_a_clear_error() {
    let (_, start, goal) = DEMO_QUERIES[0];
    // The default range for the bundled arm over a millionth of a radian: past 2^20.
    let err = refused(&start, &goal, &["--on-device", "--resolution", "1e-7"]);
    assert!(
        err.contains("resolution 0.0000001") && err.contains("too fine for the device planner"),
        "{err}"
    );
    // Within the range bound, the straight motion is checked on its own.
    let err = refused(
        &start,
        &goal,
        &["--on-device", "--resolution", "2e-6", "--range", "0.5"],
    );
    assert!(err.contains("the straight motion"), "{err}");
}

/// The device planner's escalation options are checked with the request, before anything
/// runs on a device: too many extra attempts, or extra attempts that would never start, are
/// refused naming the setting, GPU or not; valid ones reach the GPU check (none here).
#[test]
fn on_device_escalation_options_are_validated_by_name() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let cases: [(&[&str], &str); 3] = [
        (
            &["--attempts", "8", "--device-extra-attempts", "250"],
            "attempts plus extra attempts must be at most 256, got 8 + 250",
        ),
        (
            &["--device-escalate-after", "0"],
            "escalate_after must be at least 1",
        ),
        (
            &[
                "--device-extra-attempts",
                "0",
                "--device-escalate-after",
                "8",
            ],
            "on_device needs a GPU checker",
        ),
    ];
    for (opts, expected) in cases {
        let mut args = vec!["--on-device"];
        args.extend_from_slice(opts);
        let err = refused(&start, &goal, &args);
        assert!(err.contains(expected), "{opts:?}: {err}");
    }
}

/// `gmp plan --batch FILE` on the bundled robot with `extra`, the file holding `yaml`.
fn bundled_batch(yaml: &str, extra: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("gmp_batch_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("batch_{:x}.yaml", yaml.len() * 31 + extra.len()));
    std::fs::write(&file, yaml).unwrap();
    let mut args = vec!["--batch", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = bundled(&args);
    let _ = std::fs::remove_file(&file);
    out
}

#[test]
fn a_batch_plans_every_problem_and_reports_each() {
    let (_, s0, g0) = DEMO_QUERIES[0];
    let (_, s1, g1) = DEMO_QUERIES[1];
    // Shoulder lifted 2 rad: the upper arm goes down through the table.
    let bad = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0];
    let yaml = format!(
        "- name: first\n  start: {}\n  goal: {}\n- start: {}\n  goal: {}\n- name: third\n  start: {}\n  goal: {}\n",
        json_list(&s0),
        json_list(&g0),
        json_list(&bad),
        json_list(&g1),
        json_list(&s1),
        json_list(&g1)
    );
    let out = bundled_batch(&yaml, &["--seed", "2"]);
    // One problem could not be planned: exit 1, the others' trajectories still reported.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(v["success"], false);
    assert_eq!(
        (v["problems"].as_u64(), v["solved"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(v["one_device_launch"], false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 of 3 problems"), "{err}");
    let r = v["results"].as_array().unwrap();
    assert_eq!(r[0]["name"], "first");
    assert_eq!(r[1]["name"], "1");
    assert_eq!(r[2]["name"], "third");
    assert_trajectory(&r[0], &ARM_JOINTS, &s0);
    assert_trajectory(&r[2], &ARM_JOINTS, &s1);
    assert_eq!(r[1]["success"], false);
    let e = r[1]["error"].as_str().unwrap();
    assert!(e.contains("start") && e.contains("collision"), "{e}");
    // Each solved problem is the plan `gmp plan` makes of it alone.
    let alone = stdout_json(&bundled_plan(&s1, &g1, &["--seed", "2"]));
    assert_eq!(r[2]["path"], alone["path"]);
}

#[test]
fn a_bad_batch_file_is_refused_by_name() {
    let (_, s0, g0) = DEMO_QUERIES[0];
    let cases = [
        (
            format!("- start: {}\n  goal: [0.0, 1.0]\n", json_list(&s0)),
            vec!["problem 0", "goal has 2 values"],
        ),
        ("[]".to_string(), vec!["empty"]),
        (
            format!("- start: {}\n  goals: {}\n", json_list(&s0), json_list(&g0)),
            vec!["expected a list"],
        ),
    ];
    for (yaml, needles) in cases {
        let out = bundled_batch(&yaml, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{yaml}: {err}");
        assert!(out.stdout.is_empty(), "{yaml}");
        assert!(err.contains("--batch"), "{err}");
        for n in needles {
            assert!(err.contains(n), "{yaml}: {err}");
        }
    }
    // --batch with --start: refused by the argument parser.
    let out = bundled_batch("[]", &["--start", "[0,0,0,0,0,0]"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The bundled batch file (config/demo_batch.yaml): the demo queries, every one planned, in
/// the file's order and names, each starting at its start.
#[test]
fn the_bundled_batch_file_plans_every_problem() {
    let file = root().join("config/demo_batch.yaml");
    let out = bundled(&["--batch", file.to_str().unwrap(), "--seed", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(v["success"], true);
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), DEMO_QUERIES.len() + 1);
    for (entry, (name, start, _)) in r.iter().zip(DEMO_QUERIES) {
        assert_eq!(entry["name"], name);
        assert_trajectory(entry, &ARM_JOINTS, &start);
    }
}

/// `gmp spherize` writes the fitted sphere model as a `_spherized` URDF; checking with that
/// file (`--shapes spheres --spherized`) gives the verdicts of `--shapes fitted`, never calls
/// free what the polytopes find in collision, and bad options are refused naming them.
#[test]
fn spherize_writes_a_sphere_model_that_checks_like_fitted() {
    let dir = std::env::temp_dir().join(format!("gmp_spherize_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("gmp_arm_spherized.urdf");
    let urdf = root().join("urdf/gmp_arm.urdf");
    let srdf = root().join("urdf/gmp_arm.srdf");
    // The demo scene without its table: the base stands 5 mm above it, and its fitted
    // spheres, covering the cylinder's flat underside from outside, reach into it.
    let scene = dir.join("scene.yaml");
    std::fs::write(
        &scene,
        "obstacles:\n  - id: shelf\n    box: {size: [0.04, 0.9, 0.8]}\n    pose: {position: [0.6, 0.0, 0.4]}\n  - id: ball\n    sphere: {radius: 0.15}\n    pose: {position: [-0.45, -0.3, 0.6]}\n",
    )
    .unwrap();
    let (urdf, srdf, scene) = (
        urdf.to_str().unwrap(),
        srdf.to_str().unwrap(),
        scene.to_str().unwrap(),
    );
    let o = gmp(&[
        "spherize",
        "--urdf",
        urdf,
        "--srdf",
        srdf,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = stdout_json(&o);
    let spheres = summary["spheres"].as_u64().unwrap_or(0);
    assert!(
        spheres >= summary["bodies"].as_u64().unwrap_or(u64::MAX),
        "{summary}"
    );
    assert!(out.is_file());
    // The self check: random configurations free of self collision with the polytopes, and
    // with the spheres, which cover them (the bundled arm loses some to the padding).
    let check = &summary["self_check"];
    assert_eq!(check["configurations"], 1000, "{summary}");
    let free_polytopes = check["free_with_polytopes"].as_u64().unwrap_or(0);
    let free_spheres = check["free_with_spheres"].as_u64().unwrap_or(u64::MAX);
    assert!(free_spheres < free_polytopes, "{summary}");

    let names = ARM_JOINTS;
    let configs: Vec<Vec<f64>> = (0..60)
        .map(|i| {
            let t = i as f64;
            vec![
                (t * 0.37).sin() * 3.0,
                (t * 0.53).cos() * 1.5,
                (t * 0.71).sin() * 2.0,
                (t * 0.29).cos(),
                (t * 0.43).sin(),
                0.0,
            ]
        })
        .collect();
    let cfg = dir.join("configs.json");
    std::fs::write(
        &cfg,
        json!({"joint_names": names, "configs": configs}).to_string(),
    )
    .unwrap();
    let check = |shapes: &[&str]| -> Vec<bool> {
        let mut args = vec![
            "check",
            "--urdf",
            urdf,
            "--srdf",
            srdf,
            "--scene",
            scene,
            "--backend",
            "cpu",
            "--configs",
            cfg.to_str().unwrap(),
        ];
        args.extend_from_slice(shapes);
        let o = gmp(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_value(stdout_json(&o)["valid"].clone()).unwrap()
    };
    let from_file = check(&["--shapes", "spheres", "--spherized", out.to_str().unwrap()]);
    let fitted = check(&["--shapes", "fitted"]);
    let polytopes = check(&["--shapes", "polytopes"]);
    assert_eq!(from_file, fitted);
    for (i, (s, p)) in fitted.iter().zip(&polytopes).enumerate() {
        assert!(
            !s || *p,
            "config {i}: free with the spheres, in collision with the polytopes"
        );
    }
    let free = |v: &[bool]| v.iter().filter(|&&x| x).count();
    assert!(
        free(&fitted) > 0 && free(&fitted) < fitted.len(),
        "fitted {} / polytopes {} free of {}",
        free(&fitted),
        free(&polytopes),
        fitted.len()
    );

    let bad = gmp(&["spherize", "--urdf", urdf, "--sphere-tolerance=0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--sphere-tolerance"));
    let o = gmp(&[
        "check",
        "--urdf",
        urdf,
        "--configs",
        cfg.to_str().unwrap(),
        "--shapes",
        "spheres",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--shapes fitted"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bundled robot, its default group and the tool's pose at group configuration `q`.
/// The bundled arm, loaded once (kinematics only).
fn arm() -> &'static gpu_motion_planner::robot::RobotModel {
    use gpu_motion_planner::robot::{LoadOptions, RobotModel};
    static ARM: std::sync::OnceLock<RobotModel> = std::sync::OnceLock::new();
    ARM.get_or_init(|| {
        RobotModel::from_urdf_file(
            &root().join("urdf/gmp_arm.urdf"),
            Some(&root().join("urdf/gmp_arm.srdf")),
            &LoadOptions {
                skip_geometry: true,
                ..LoadOptions::default()
            },
        )
        .expect("bundled robot")
    })
}

fn tool_pose(q: &[f64]) -> nalgebra::Isometry3<f64> {
    use gpu_motion_planner::robot::ik::default_tip_link;
    let robot = arm();
    let group = robot.default_group();
    let tip = default_tip_link(robot, &group).expect("tip");
    let state = group.full_state(&robot.tree.neutral_state(), q);
    robot.tree.forward_kinematics(&state)[tip]
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// `gmp plan` on the bundled robot with `args`, which must plan a trajectory from `start` to a
/// pose of tool0; the report.
fn pose_plan(args: &[&str], start: &[f64]) -> Value {
    let out = bundled(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_trajectory(&v, &ARM_JOINTS, start);
    assert_eq!(v["goal_pose"]["target"]["link"], "tool0");
    v
}

/// The last point of the report's trajectory, put through forward kinematics here, puts tool0
/// within the tolerances of `target`.
fn assert_ends_at(v: &Value, target: &nalgebra::Isometry3<f64>, dp: f64, dr: f64) {
    let points = v["points"].as_array().unwrap();
    let reached = tool_pose(&numbers(&points[points.len() - 1]["positions"]));
    assert!((reached.translation.vector - target.translation.vector).norm() <= dp);
    assert!(reached.rotation.angle_to(&target.rotation) <= dr);
}

#[test]
fn plan_to_a_pose_goal_ends_at_the_pose() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let target = tool_pose(&goal);
    let (t, r) = (target.translation.vector, target.rotation.coords);
    let pose = json_list(&[t.x, t.y, t.z, r.x, r.y, r.z, r.w]);
    let s = json_list(&start);
    let v = pose_plan(
        &["--start", &s, "--goal-pose", &pose, "--seed", "2"],
        &start,
    );
    let g = &v["goal_pose"];
    assert!(g["position_error"].as_f64().unwrap() <= 1e-4);
    assert!(g["orientation_error"].as_f64().unwrap() <= 1e-3);
    // The search ran whole batches of starts and was not cut short (plenty of time).
    let tried = g["ik_starts_tried"].as_u64().unwrap();
    assert!(tried >= 16 && tried.is_multiple_of(16), "{g}");
    assert_eq!(g["ik_cut_at_time_share"], false);
    assert_ends_at(&v, &target, 1e-4, 1e-3);
    // The same answer for the same seed.
    let again = stdout_json(&bundled(&[
        "--start",
        &s,
        "--goal-pose",
        &pose,
        "--seed",
        "2",
    ]));
    assert_eq!(again["path"], v["path"]);
}

#[test]
fn other_goal_poses_plan_to_whichever_pose_is_reached() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let target = tool_pose(&goal);
    let (t, r) = (target.translation.vector, target.rotation.coords);
    let pose = json_list(&[t.x, t.y, t.z, r.x, r.y, r.z, r.w]);
    let s = json_list(&start);
    // The goal pose is out of reach; the other one is the goal's tool pose.
    let args = [
        "--start",
        &s,
        "--goal-pose",
        "[3.0, 0.0, 0.5]",
        "--other-goal-pose",
        &pose,
        "--seed",
        "2",
    ];
    let v = pose_plan(&args, &start);
    assert_eq!(v["reached_goal"], 1);
    assert_ends_at(&v, &target, 1e-4, 1e-3);
    let g = &v["goal_pose"];
    assert!(g["position_error"].as_f64().unwrap() <= 1e-4);
    let (x, y, z) = (t.x, t.y, t.z);
    let at = numbers(&g["target"]["position"]);
    assert!((at[0] - x).abs() + (at[1] - y).abs() + (at[2] - z).abs() < 1e-9);
    // Without a pose goal, or with a bad pose, refused by name.
    let out = bundled(&[
        "--start",
        &s,
        "--goal",
        &json_list(&goal),
        "--other-goal-pose",
        &pose,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--other-goal-pose") && err.contains("cannot be used with"),
        "{err}"
    );
    let out = bundled(&[
        "--start",
        &s,
        "--goal-pose",
        &pose,
        "--other-goal-pose",
        "[1, 2]",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--other-goal-pose #1 needs 3 values"), "{err}");
}

#[test]
fn bad_pose_goals_are_refused_by_name() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let s = json_list(&start);
    for (extra, needle) in [
        (
            vec!["--goal-pose", "[0.4, 0.1]"],
            "--goal-pose needs 3 values",
        ),
        (
            vec!["--goal-pose", "[0.4, 0.1, 0.5, 0, 0, 0, 0]"],
            "quaternion",
        ),
        (
            vec!["--goal-pose", "nope"],
            "--goal-pose must be a JSON list",
        ),
        (
            vec![
                "--goal-pose",
                "[0.4, 0.1, 0.5]",
                "--goal-link",
                "no_such_link",
            ],
            "--goal-link",
        ),
        (
            vec![
                "--goal-pose",
                "[0.4, 0.1, 0.5]",
                "--position-tolerance",
                "0",
            ],
            "--position-tolerance",
        ),
        (
            vec![
                "--goal-pose",
                "[0.4, 0.1, 0.5]",
                "--goal",
                &json_list(&goal),
            ],
            "cannot be used with",
        ),
    ] {
        let mut args = vec!["--start", s.as_str()];
        args.extend(extra.iter().copied());
        let out = bundled(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    // Out of reach: no inverse kinematics solution, exit 1 with success false.
    let out = bundled(&["--start", &s, "--goal-pose", "[3.0, 0.0, 0.5]"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["success"], false);
    assert!(v["error"].as_str().unwrap().contains("inverse kinematics"));
}

#[test]
fn ik_lists_collision_free_solutions_nearest_first() {
    let (_, start, goal) = DEMO_QUERIES[1];
    let target = tool_pose(&goal).translation.vector;
    let pose = json_list(&[target.x, target.y, target.z]);
    let s = json_list(&start);
    let out = bundled_command("ik", &["--goal-pose", &pose, "--start", &s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let sols = v["solutions"].as_array().unwrap();
    assert!(!sols.is_empty());
    assert_eq!(v["target"]["orientation"], Value::Null);
    let mut last = 0.0;
    for sol in sols {
        let q = numbers(&sol["config"]);
        assert!((tool_pose(&q).translation.vector - target).norm() <= 1e-4);
        let d = sol["distance_from_start"].as_f64().unwrap();
        assert!(d >= last, "not sorted by distance");
        last = d;
    }
    assert_eq!(
        sols.len() + v["in_collision"].as_u64().unwrap() as usize,
        v["found"].as_u64().unwrap() as usize
    );

    // --timeout: out of reach with 10000 starts allowed, the search stops after its first
    // batch of 16; without --timeout, the group's kinematics_solver_timeout of --kinematics
    // does the same; a timeout that is not positive is refused naming it.
    let dir = tempfile::tempdir().unwrap();
    let kin = dir.path().join("kinematics.yaml");
    std::fs::write(&kin, "arm:\n  kinematics_solver_timeout: 1.0e-9\n").unwrap();
    for limit in [
        ["--timeout", "1e-9"],
        ["--kinematics", kin.to_str().unwrap()],
    ] {
        let mut args = vec!["--goal-pose", "[3.0, 0.0, 0.5]", "--ik-starts", "10000"];
        args.extend(limit);
        let v = stdout_json(&bundled_command("ik", &args));
        assert_eq!(v["success"], false);
        assert_eq!(v["found"], 0);
        assert_eq!(v["starts_tried"], 16, "{limit:?}");
    }
    let out = bundled_command("ik", &["--goal-pose", &pose, "--timeout", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--timeout"), "{err}");
}

/// A MoveIt MotionPlanRequest for the bundled arm from `start` to a pose constraint of tool0
/// (`region`: the YAML of its constraint_region.primitives entry).
fn pose_request_yaml(start: &[f64], target: &nalgebra::Isometry3<f64>, region: &str) -> String {
    let (t, q) = (target.translation.vector, target.rotation.coords);
    format!(
        "group_name: arm
start_state:
  joint_state:
    name: {names:?}
    position: {start:?}
goal_constraints:
  - position_constraints:
      - header: {{frame_id: world}}
        link_name: tool0
        target_point_offset: {{x: 0, y: 0, z: 0}}
        constraint_region:
          primitives:
            - {region}
          primitive_poses:
            - position: {{x: {}, y: {}, z: {}}}
              orientation: {{x: 0, y: 0, z: 0, w: 1}}
        weight: 1.0
    orientation_constraints:
      - header: {{frame_id: world}}
        link_name: tool0
        orientation: {{x: {}, y: {}, z: {}, w: {}}}
        absolute_x_axis_tolerance: 0.01
        absolute_y_axis_tolerance: 0.02
        absolute_z_axis_tolerance: 0.01
        weight: 1.0
",
        t[0],
        t[1],
        t[2],
        q[0],
        q[1],
        q[2],
        q[3],
        names = ARM_JOINTS,
    )
}

#[test]
fn plan_from_a_moveit_request_with_a_pose_constraint() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let target = tool_pose(&goal);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pose_request.yaml");
    let yaml = pose_request_yaml(&start, &target, "{type: 2, dimensions: [0.002]}");
    std::fs::write(&path, yaml).unwrap();
    let v = pose_plan(&["--request", path.to_str().unwrap()], &start);
    // The sphere's radius and the smallest axis tolerance are the tolerances.
    assert_eq!(v["goal_pose"]["target"]["position_tolerance"], 0.002);
    assert_eq!(v["goal_pose"]["target"]["orientation_tolerance"], 0.01);
    assert_ends_at(&v, &target, 0.002, 0.01);

    // A region that is neither a box nor a sphere is refused, naming the constraint.
    let bad = pose_request_yaml(&start, &target, "{type: 3, dimensions: [0.1, 0.02]}");
    std::fs::write(&path, bad).unwrap();
    let out = bundled(&["--request", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("goal_constraints[0]") && err.contains("BOX"),
        "{err}"
    );
}

#[test]
fn a_moveit_request_with_several_pose_constraints_plans_to_any() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let target = tool_pose(&goal);
    let far = nalgebra::Isometry3::translation(3.0, 0.0, 0.5);
    let region = "{type: 2, dimensions: [0.002]}";
    // goal_constraints[0]: out of reach; goal_constraints[1]: the goal's tool pose.
    let first = pose_request_yaml(&start, &far, region);
    let second = pose_request_yaml(&start, &target, region);
    let (_, block) = second
        .split_once("goal_constraints:\n")
        .expect("a goal_constraints block");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two_poses.yaml");
    std::fs::write(&path, format!("{first}{block}")).unwrap();
    let v = pose_plan(&["--request", path.to_str().unwrap()], &start);
    assert_eq!(v["reached_goal"], 1);
    assert_ends_at(&v, &target, 0.002, 0.01);
    // A bad further pose is named by its index among the goal constraints, past one without a
    // position constraint (not used beside a pose goal).
    let joints =
        "  - joint_constraints:\n      - {joint_name: shoulder_pan_joint, position: 0.0}\n";
    let bad = block.replace("frame_id: world", "frame_id: nowhere");
    std::fs::write(&path, format!("{first}{joints}{bad}")).unwrap();
    let out = bundled(&["--request", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("goal_constraints[2]") && err.contains("'nowhere'"),
        "{err}"
    );
    // Only the first would be NO_IK_SOLUTION.
    std::fs::write(&path, &first).unwrap();
    let out = bundled(&["--request", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"]
        .as_str()
        .unwrap()
        .contains("inverse kinematics"));
}

#[test]
fn cartesian_moves_the_tool_along_a_line_and_reports_a_partial_path() {
    let start = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
    let s = json_list(&start);
    let from = tool_pose(&start);
    let t = from.translation.vector;
    // 10 cm down, the orientation kept (a position-only waypoint).
    let down = json_list(&[t.x, t.y, t.z - 0.1]);
    let out = bundled_command(
        "cartesian",
        &["--start", &s, "--waypoints", &format!("[{down}]")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(v["success"], true);
    assert_eq!(v["fraction"], 1.0);
    assert_eq!(v["steps"], 10);
    assert_eq!(v["link"], "tool0");
    assert_eq!(v["stop"], Value::Null);
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 11);
    for p in points {
        let q = numbers(&p["positions"]);
        let at = tool_pose(&q);
        let off = ((at.translation.x - t.x).powi(2) + (at.translation.y - t.y).powi(2)).sqrt();
        assert!(off <= 1e-4, "{off} m off the line");
        assert!(at.rotation.angle_to(&from.rotation) <= 1e-3);
    }
    let last = numbers(&points[points.len() - 1]["positions"]);
    assert!((tool_pose(&last).translation.z - (t.z - 0.1)).abs() <= 1e-4);

    // Far out of reach: the part achieved, exit 1 with success false and the reason.
    let far = json_list(&[t.x, t.y - 2.0, t.z]);
    let out = bundled_command(
        "cartesian",
        &["--start", &s, "--waypoints", &format!("[{far}]")],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["success"], false);
    let fraction = v["fraction"].as_f64().unwrap();
    assert!(fraction < 1.0, "{fraction}");
    assert!(v["stop"]["reason"].is_string(), "{}", v["stop"]);
    assert!(v["error"].as_str().unwrap().contains("the path ends at"));
}

#[test]
fn cartesian_refuses_bad_input_by_name() {
    let s = json_list(&[-2.8, 0.3, 0.8, 0.0, 0.0, 0.0]);
    for (extra, needle) in [
        (vec!["--waypoints", "[]"], "at least one waypoint"),
        (vec!["--waypoints", "[[0.1, 0.2]]"], "--waypoints[0]"),
        (
            vec!["--waypoints", "not json"],
            "--waypoints must be a JSON list",
        ),
        (
            vec!["--waypoints", "[[0.3, 0.0, 0.3, 0, 0, 0, 0]]"],
            "quaternion",
        ),
        (
            vec!["--waypoints", "[[0.3, 0.0, 0.3]]", "--link", "gripper"],
            "--link",
        ),
        (
            vec!["--waypoints", "[[0.3, 0.0, 0.3]]", "--max-step", "0"],
            "--max-step",
        ),
        (
            vec![
                "--waypoints",
                "[[0.3, 0.0, 0.3]]",
                "--velocity-scaling",
                "2",
            ],
            "--velocity-scaling",
        ),
    ] {
        let mut args = vec!["--start", s.as_str()];
        args.extend(extra.iter().copied());
        let out = bundled_command("cartesian", &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
}

/// `gmp plan` carries the `attached:` objects of the scene file: a bar held by the tool plans
/// when the flange it starts on is a touch link, is in collision at the start when it is not,
/// and an unknown holding link is refused naming the object and the link.
#[test]
fn plan_carries_the_scene_file_s_attached_objects() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = std::fs::read_to_string(root().join("config/default_scene.yaml")).expect("scene");
    let scene_with = |extra: &str| -> PathBuf {
        let path = dir.path().join(format!("scene_{}.yaml", extra.len()));
        std::fs::write(&path, format!("{base}\nattached:\n{extra}")).expect("write");
        path
    };
    let bar = |link: &str, touch: &str| {
        format!(
            "  - id: bar\n    link: {link}\n    touch_links: [{touch}]\n    \
             box: {{size: [0.04, 0.04, 0.3]}}\n    pose: {{position: [0, 0, 0.15]}}\n"
        )
    };
    // The start and goal of the service tests, solvable carrying the bar.
    let (start, goal) = (
        [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0],
        [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0],
    );
    let run = |scene: &Path| plan_in_scene(scene, &start, &goal, "3");
    let out = run(&scene_with(&bar("tool0", "flange_link")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_trajectory(&stdout_json(&out), &ARM_JOINTS, &start);
    let out = run(&scene_with(&bar("tool0", "")));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("start") && err.contains("collision"), "{err}");
    // The error names the pair: the bar against the flange it starts on.
    assert!(err.contains("'flange_link' with 'bar'"), "{err}");
    let out = run(&scene_with(&bar("gripper", "flange_link")));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'bar'") && err.contains("gripper"), "{err}");
}

/// `gmp scene` converts the bundled scene to MoveIt `.scene` text and back; a plan in the
/// converted scene is the plan in the original (same seed), and a broken `.scene` file is
/// refused naming the file and the line.
#[test]
fn scene_converts_between_formats_and_plans_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let original = root().join("config/default_scene.yaml");
    let text_path = dir.path().join("cell.scene");
    let yaml_path = dir.path().join("back.yaml");
    let out = gmp(&[
        "scene",
        "--scene",
        original.to_str().unwrap(),
        "--out",
        text_path.to_str().unwrap(),
    ]);
    let first = stdout_json(&out);
    assert_eq!(first["written"]["format"], "moveit_scene_text");
    let text = std::fs::read_to_string(&text_path).unwrap();
    assert!(
        text.starts_with("cell\n* ") && text.ends_with("\n.\n"),
        "{text}"
    );
    let back = stdout_json(&gmp(&[
        "scene",
        "--scene",
        text_path.to_str().unwrap(),
        "--out",
        yaml_path.to_str().unwrap(),
    ]));
    assert_eq!(back["written"]["format"], "gmp_yaml");
    // The same obstacles (ids, shapes, positions) in all three.
    let again = stdout_json(&gmp(&["scene", "--scene", yaml_path.to_str().unwrap()]));
    assert!(first["obstacles"].as_array().is_some_and(|o| o.len() >= 3));
    assert_eq!(back["obstacles"], first["obstacles"]);
    assert_eq!(again["obstacles"], first["obstacles"]);

    let (_, start, goal) = DEMO_QUERIES[0];
    let plan_in = |scene: &Path| stdout_json(&plan_in_scene(scene, &start, &goal, "5"));
    let (a, b) = (plan_in(&original), plan_in(&text_path));
    assert_eq!(a["success"], true);
    assert_eq!(a["path"], b["path"]);
    assert_eq!(a["points"], b["points"]);

    let broken = dir.path().join("broken.scene");
    std::fs::write(
        &broken,
        "cell\n* a\n1\ncone\n0.1 0.2\n0 0 0\n0 0 0 1\n0 0 0 0\n.\n",
    )
    .unwrap();
    let out = gmp(&["scene", "--scene", broken.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("broken.scene: line 4") && err.contains("cone"),
        "{err}"
    );
}

/// `gmp scene --mesh-convex-parts` splits a MoveIt scene's concave mesh into convex parts and
/// writes them as `convex` obstacles, which load back as they were; out-of-range values are
/// refused naming the option.
#[test]
fn scene_splits_moveit_meshes_into_convex_parts() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("bin.scene");
    std::fs::write(&text, common::bin::bin_scene_text()).unwrap();
    let out_path = dir.path().join("parts.yaml");
    let hull = stdout_json(&gmp(&["scene", "--scene", text.to_str().unwrap()]));
    assert_eq!(hull["obstacles"].as_array().map(Vec::len), Some(1));
    let split = stdout_json(&gmp(&[
        "scene",
        "--scene",
        text.to_str().unwrap(),
        "--mesh-convex-parts",
        "16",
        "--out",
        out_path.to_str().unwrap(),
    ]));
    let parts = split["obstacles"].as_array().expect("obstacles");
    assert!((2..=16).contains(&parts.len()), "{split}");
    assert!(parts.iter().all(|o| o["shape"] == "convex"), "{split}");
    assert_eq!(parts[1]["id"], "bin/1");
    let back = stdout_json(&gmp(&["scene", "--scene", out_path.to_str().unwrap()]));
    assert_eq!(back["obstacles"], split["obstacles"]);
    for (flag, value) in [("--mesh-convex-parts", "0"), ("--mesh-resolution", "4")] {
        let out = gmp(&["scene", "--scene", text.to_str().unwrap(), flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("--mesh-convex-parts"),
            "{flag} {value}: {err}"
        );
    }
}

/// `gmp scene` lists the allowed pairs of a MoveIt scene's `allowed_collision_matrix`, and
/// says it leaves them out when it writes the project's format.
#[test]
fn scene_lists_a_moveit_matrix_and_says_what_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("cell.yaml");
    std::fs::write(
        &from,
        "allowed_collision_matrix:\n  entry_names: [tool0, pad, ghost]\n  entry_values:\n    \
         - [false, true, false]\n    - [true, false, false]\n    - [false, false, false]\n\
         world:\n  collision_objects:\n    - id: pad\n      primitives: [{type: box, \
         dimensions: [0.1, 0.1, 0.1]}]\n      primitive_poses: [{position: [0.5, 0, 0.2]}]\n",
    )
    .unwrap();
    let to = dir.path().join("out.yaml");
    let out = gmp(&[
        "scene",
        "--scene",
        from.to_str().unwrap(),
        "--out",
        to.to_str().unwrap(),
    ]);
    let v = stdout_json(&out);
    assert_eq!(
        v["allowed_collision_matrix"],
        serde_json::json!([{"a": "tool0", "b": "pad", "allowed": true}])
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 allowed pair(s)") && err.contains("left out"),
        "{err}"
    );
    let written = std::fs::read_to_string(&to).unwrap();
    assert!(!written.contains("allowed_collisions"), "{written}");
    assert!(written.contains("pad"), "{written}");
    // A matrix pair naming what neither the robot nor the scene has: `gmp plan` leaves it
    // aside and says so on stderr, naming it.
    let ghostly = dir.path().join("ghost.yaml");
    let text = std::fs::read_to_string(&from).unwrap().replace(
        "- [false, true, false]\n    - [true, false, false]\n    - [false, false, false]",
        "- [false, true, true]\n    - [true, false, false]\n    - [true, false, false]",
    );
    assert!(text.contains("[false, true, true]"), "{text}");
    std::fs::write(&ghostly, text).unwrap();
    let (_, start, goal) = DEMO_QUERIES[0];
    let out = gmp(&[
        "plan",
        "--urdf",
        root().join("urdf/gmp_arm.urdf").to_str().unwrap(),
        "--srdf",
        root().join("urdf/gmp_arm.srdf").to_str().unwrap(),
        "--scene",
        ghostly.to_str().unwrap(),
        "--backend",
        "cpu",
        "--start",
        &json_list(&start),
        "--goal",
        &json_list(&goal),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("allowed_collision_matrix names ghost") && err.contains("left aside"),
        "{err}"
    );
}

/// A scene's `allowed_collisions:` entries apply to `gmp plan`: the hand starts inside a pad
/// it may touch, and the plan leaves it; every point is free of every contact but the allowed
/// ones for a plain CPU checker of the whole scene. Without the entries the start is refused.
#[test]
fn scene_allowed_collisions_apply_to_plans() {
    use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker};
    let start = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
    let goal = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];
    let (robot, _) = gpu_motion_planner::cli::demo::bundled().expect("bundled");
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let tool = robot.tree.link("tool0").expect("tool0");
    let t = robot
        .tree
        .forward_kinematics(&group.full_state(&base, &start))[tool]
        .translation
        .vector;
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = format!(
        "obstacles:\n  - id: pad\n    box: {{size: [0.16, 0.16, 0.16]}}\n    pose: {{position: [{}, {}, {}]}}\n",
        t.x, t.y, t.z
    );
    let hand = ["flange_link", "wrist_2_link"];
    let allowed = format!(
        "{plain}allowed_collisions:\n  - {{a: {}, b: pad}}\n  - {{a: {}, b: pad}}\n",
        hand[0], hand[1]
    );
    let (plain_path, allowed_path) = (dir.path().join("plain.yaml"), dir.path().join("pad.yaml"));
    std::fs::write(&plain_path, &plain).unwrap();
    std::fs::write(&allowed_path, &allowed).unwrap();

    let out = plan_in_scene(&plain_path, &start, &goal, "5");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("start") && err.contains("'pad'"), "{err}");

    let out = plan_in_scene(&allowed_path, &start, &goal, "5");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let scene = gpu_motion_planner::scene::Scene::from_file(&allowed_path).expect("scene");
    let reference =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).expect("cpu");
    let struck: Vec<String> = hand
        .iter()
        .map(|l| format!("'{l}' with obstacle 'pad'"))
        .collect();
    let points = v["points"].as_array().expect("points");
    let mut touching = 0;
    for p in points {
        let q: Vec<f64> = serde_json::from_value(p["positions"].clone()).expect("positions");
        let contacts = reference.contacts(&q).expect("contacts");
        touching += usize::from(!contacts.is_empty());
        let left: Vec<&String> = contacts.iter().filter(|c| !struck.contains(c)).collect();
        assert!(left.is_empty(), "{left:?} at {q:?}");
    }
    // The start touches the pad (allowed), so the entries mattered.
    assert!(touching >= 1);
}

/// `--start` and `--goal` take named states of the group's SRDF (`ready`, `home`); an
/// unknown name is refused listing the group's names.
#[test]
fn plan_between_named_states() {
    let out = bundled(&["--start", "ready", "--goal", "home", "--seed", "3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_trajectory(&v, &ARM_JOINTS, &[-1.2, 0.3, 0.8, 0.0, 0.0, 0.0]);
    let points = v["points"].as_array().unwrap();
    let last = &points[points.len() - 1]["positions"];
    assert_eq!(last, &json!([0.0, 0.0, 0.0, 0.0, 0.0, 0.0]));
    let out = bundled(&["--start", "ready", "--goal", "nowhere"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--goal: no named state 'nowhere'") && err.contains("home, ready"),
        "{err}"
    );
    // gmp ik and gmp cartesian read --start the same way.
    for (command, target) in [("ik", "--goal-pose"), ("cartesian", "--waypoints")] {
        let point = if command == "ik" {
            "[0.4, 0.2, 0.5]"
        } else {
            "[[0.4, 0.2, 0.5]]"
        };
        let out = bundled_command(command, &["--start", "nowhere", target, point]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains("--start: no named state 'nowhere'"),
            "{command}: {err}"
        );
    }
}

/// The tool's highest speed along a printed trajectory, between points 1 ms apart as a
/// controller's cubic follows them (positions alone, by the test's own kinematics).
fn tool_peak_speed(v: &Value) -> f64 {
    let traj: gpu_motion_planner::trajectory::Trajectory = serde_json::from_value(json!({
        "joint_names": v["joint_names"],
        "points": v["points"],
    }))
    .expect("a trajectory");
    let dt = 1e-3;
    let steps = (traj.duration() / dt).ceil() as usize;
    let at = |t: f64| tool_pose(&traj.sample(t).0).translation.vector;
    (0..steps)
        .map(|i| (at((i + 1) as f64 * dt) - at(i as f64 * dt)).norm() / dt)
        .fold(0.0, f64::max)
}

#[test]
fn max_cartesian_speed_slows_plans_and_cartesian_paths() {
    let start = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
    let goal = [-1.2, 0.3, 0.8, 0.0, 0.0, 0.0];
    let free = stdout_json(&bundled_plan(&start, &goal, &["--seed", "2"]));
    assert_eq!(free["success"], true);
    assert!(free["link_speed"].is_null());
    let slow = stdout_json(&bundled_plan(
        &start,
        &goal,
        &["--seed", "2", "--max-cartesian-speed", "0.1"],
    ));
    assert_eq!(slow["success"], true, "{slow}");
    assert_eq!(slow["link_speed"]["link"], "tool0");
    assert!(slow["link_speed"]["factor"].as_f64().unwrap() > 1.0);
    assert_eq!(
        slow["link_speed"]["retimed"], true,
        "{}",
        slow["link_speed"]
    );
    assert_eq!(slow["path"], free["path"]);
    let peak = tool_peak_speed(&slow);
    assert!(peak <= 0.1 * 1.001, "{peak}");
    assert!(tool_peak_speed(&free) > 0.1);
    assert!(slow["duration"].as_f64().unwrap() > free["duration"].as_f64().unwrap());

    // gmp cartesian: the link moved, 10 cm down at 2 cm/s.
    let t = tool_pose(&start).translation.vector;
    let down = json_list(&[t.x, t.y, t.z - 0.1]);
    let out = bundled_command(
        "cartesian",
        &[
            "--start",
            &json_list(&start),
            "--waypoints",
            &format!("[{down}]"),
            "--max-cartesian-speed",
            "0.02",
        ],
    );
    let v = stdout_json(&out);
    assert_eq!(v["success"], true);
    assert_eq!(v["link_speed"]["link"], "tool0");
    assert_eq!(v["link_speed"]["retimed"], true, "{}", v["link_speed"]);
    assert!(tool_peak_speed(&v) <= 0.02 * 1.001);
    assert!(v["duration"].as_f64().unwrap() >= 5.0, "{}", v["duration"]);

    // Bad values are refused by name.
    for (extra, want) in [
        (
            ["--max-cartesian-speed", "0"].as_slice(),
            "--max-cartesian-speed",
        ),
        (
            [
                "--max-cartesian-speed",
                "0.1",
                "--speed-limited-link",
                "nope",
            ]
            .as_slice(),
            "--speed-limited-link",
        ),
    ] {
        let out = bundled_plan(&start, &goal, extra);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
    }
}

/// `--planner PTP` plans the straight joint motion; `--planner LIN` moves the tool along a
/// straight line into a joint goal, and refuses (exit 1, "success": false) a goal the line
/// reaches in another configuration: at the wrist singularity (wrist_2 at 0) the wrist's
/// other joints trade places.
#[test]
fn pilz_ptp_and_lin_from_the_command_line() {
    let start = [-2.8, 0.3, 0.8, 0.3, 0.5, 0.2];
    let goal = [-2.6, 0.4, 0.9, 0.3, 0.5, 0.2];
    let ptp = stdout_json(&bundled_plan(&start, &goal, &["--planner", "PTP"]));
    assert_eq!(
        (&ptp["success"], &ptp["planner"]),
        (&json!(true), &json!("ptp"))
    );
    assert_eq!(ptp["path"], json!([start, goal]));

    let lin = stdout_json(&bundled_plan(&start, &goal, &["--planner", "LIN"]));
    assert_eq!(
        (&lin["success"], &lin["planner"]),
        (&json!(true), &json!("lin"))
    );
    let path: Vec<Vec<f64>> = serde_json::from_value(lin["path"].clone()).unwrap();
    assert!(path.len() > 10, "{}", path.len());
    assert_eq!(path.last().unwrap(), &goal.to_vec());
    let (a, b) = (
        tool_pose(&start).translation.vector,
        tool_pose(&goal).translation.vector,
    );
    let dir = (b - a).normalize();
    for q in &path {
        let p = tool_pose(q).translation.vector - a;
        let off = (p - dir * p.dot(&dir)).norm();
        assert!(off < 2e-3, "{off} m off the line at {q:?}");
    }

    // CIRC: a quarter circle of 8 cm about a centre below the tool, to a pose goal.
    let from = tool_pose(&start);
    let c = a - nalgebra::Vector3::z() * 0.08;
    let at =
        |t: f64| c + (nalgebra::Vector3::z() * t.cos() + nalgebra::Vector3::x() * t.sin()) * 0.08;
    let (to, q) = (at(std::f64::consts::FRAC_PI_2), from.rotation.coords);
    let pose = json_list(&[to.x, to.y, to.z, q.x, q.y, q.z, q.w]);
    let interim = at(std::f64::consts::FRAC_PI_4);
    let circ_with = |extra: &[&str]| {
        let start = json_list(&start);
        let mut args = vec!["--start", &start, "--goal-pose", &pose, "--planner", "CIRC"];
        args.extend_from_slice(extra);
        bundled(&args)
    };
    let circ = stdout_json(&circ_with(&[
        "--circ-interim",
        &json_list(&[interim.x, interim.y, interim.z]),
    ]));
    assert_eq!(
        (&circ["success"], &circ["planner"]),
        (&json!(true), &json!("circ")),
        "{circ}"
    );
    let path: Vec<Vec<f64>> = serde_json::from_value(circ["path"].clone()).unwrap();
    for q in &path {
        let r = (tool_pose(q).translation.vector - c).norm();
        assert!((r - 0.08).abs() < 2e-3, "{r} m from the centre at {q:?}");
    }
    let out = circ_with(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--circ-center or --circ-interim"), "{err}");

    let singular = [-2.8, 0.3, 0.8, 0.0, 0.0, 0.0];
    let out = bundled_plan(
        &singular,
        &[-2.6, 0.4, 0.9, 0.0, 0.0, 0.0],
        &["--planner", "LIN"],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["success"], false);
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("another joint configuration"), "{e}");
}

/// `gmp plan --sequence FILE`: two PTP motions (a pan turn, then an elbow fold) joined, with
/// a 5 cm blend at the corner quicker than stopping there and not stopping; the output names
/// the blend; a radius on the last motion and an unknown key are refused (exit 2) naming them.
#[test]
fn a_sequence_file_plans_motions_one_after_another_with_blends() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, radius: f64, extra: &str| {
        let path = dir.path().join(name);
        let text = format!(
            "items:\n\
             - {{planner: PTP, goal: [-2.0, 0.3, 0.8, 0.3, 0.5, 0.2], blend_radius: {radius}, \
             velocity_scaling: 0.5, acceleration_scaling: 0.5}}\n\
             - {{planner: PTP, goal: [-2.0, 0.9, 0.2, 0.3, 0.5, 0.2], \
             velocity_scaling: 0.5, acceleration_scaling: 0.5{extra}}}\n"
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let start = "[-2.8, 0.3, 0.8, 0.3, 0.5, 0.2]";
    let run = |path: &Path| bundled(&["--start", start, "--sequence", path.to_str().unwrap()]);
    let stopping = run(&write("stop.yaml", 0.0, ""));
    assert!(
        stopping.status.success(),
        "{}",
        String::from_utf8_lossy(&stopping.stderr)
    );
    let stopping = stdout_json(&stopping);
    let blended = run(&write("blend.yaml", 0.05, ""));
    assert!(
        blended.status.success(),
        "{}",
        String::from_utf8_lossy(&blended.stderr)
    );
    let blended = stdout_json(&blended);
    for v in [&stopping, &blended] {
        assert_eq!(v["success"], json!(true));
        assert_eq!(v["joint_names"], json!(ARM_JOINTS));
        let points = v["points"].as_array().unwrap();
        let last = &points[points.len() - 1];
        let end: Vec<f64> = serde_json::from_value(last["positions"].clone()).unwrap();
        for (x, y) in end.iter().zip([-2.0, 0.9, 0.2, 0.3, 0.5, 0.2]) {
            assert!((x - y).abs() < 1e-9, "{end:?}");
        }
        assert_eq!(v["items"].as_array().unwrap().len(), 2);
    }
    assert_eq!(stopping["blends"], json!([]));
    let blends = blended["blends"].as_array().unwrap();
    assert_eq!((blends.len(), &blends[0]["radius"]), (1, &json!(0.05)));
    let handover = blended["item_ends"][0].as_u64().unwrap() as usize;
    let v: Vec<f64> =
        serde_json::from_value(blended["points"][handover]["velocities"].clone()).unwrap();
    assert!(
        v.iter().any(|x| x.abs() > 1e-3),
        "moving at the corner: {v:?}"
    );
    let duration = |v: &Value| v["duration_s"].as_f64().unwrap();
    assert!(duration(&blended) < duration(&stopping));

    let last = run(&write("last.yaml", 0.0, ", blend_radius: 0.05"));
    assert_eq!(last.status.code(), Some(2));
    let e = String::from_utf8_lossy(&last.stderr);
    assert!(
        e.contains("item 1 (PTP): blend_radius") && e.contains("last motion"),
        "{e}"
    );
    let unknown = run(&write("bad.yaml", 0.0, ", speed: 3"));
    assert_eq!(unknown.status.code(), Some(2));
    let e = String::from_utf8_lossy(&unknown.stderr);
    assert!(e.contains("bad.yaml") && e.contains("speed"), "{e}");
}

/// A sequence item may have a goal set (`other_goals`) or several poses (`other_poses`): it
/// ends at the goal reached, named in the output, and the next item starts there.
#[test]
fn sequence_items_take_other_goals_and_other_poses() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let target = tool_pose(&goal);
    let (t, r) = (target.translation.vector, target.rotation.coords);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sets.yaml");
    // Item 0: a pose out of reach or the goal's tool pose; item 1: back to a goal in the
    // table (in collision) or the start.
    let text = format!(
        "items:\n\
         - {{pose: {{position: [3.0, 0.0, 0.5]}}, other_poses: [{{position: [{}, {}, {}], \
         orientation: [{}, {}, {}, {}]}}]}}\n\
         - {{goal: [0.0, 2.0, 0.0, 0.0, 0.0, 0.0], other_goals: [{}]}}\n",
        t.x,
        t.y,
        t.z,
        r.x,
        r.y,
        r.z,
        r.w,
        json_list(&start)
    );
    std::fs::write(&path, text).unwrap();
    let s = json_list(&start);
    let out = bundled(&["--start", &s, "--sequence", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let reached: Vec<u64> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["reached_goal"].as_u64().unwrap())
        .collect();
    assert_eq!(reached, [1, 1]);
    let points = v["points"].as_array().unwrap();
    let at_end = |k: usize| numbers(&points[k]["positions"]);
    let handover = v["item_ends"][0].as_u64().unwrap() as usize;
    let reached_pose = tool_pose(&at_end(handover));
    assert!((reached_pose.translation.vector - t).norm() <= 1e-4);
    // At the start again; the last joint is continuous, so a whole turn off is the start too.
    let end = at_end(points.len() - 1);
    for (x, y) in end.iter().zip(start) {
        let off = (x - y).rem_euclid(std::f64::consts::TAU);
        assert!(off.min(std::f64::consts::TAU - off) < 1e-9, "{end:?}");
    }
}

#[test]
fn other_goals_make_a_goal_set_and_the_output_names_the_goal_reached() {
    let (_, start, goal) = DEMO_QUERIES[0];
    // The goal is in collision (the upper arm through the table): the plan ends at the
    // other goal, reported as goal 1, for RRT-Connect (one goal tree) and PRM (in turn).
    let in_table = json_list(&[0.0, 2.0, 0.0, 0.0, 0.0, 0.0]);
    let other = json_list(&goal);
    for planner in ["rrt_connect", "prm"] {
        let out = bundled_plan(
            &start,
            &[0.0, 2.0, 0.0, 0.0, 0.0, 0.0],
            &["--other-goal", &other, "--planner", planner],
        );
        assert_eq!(out.status.code(), Some(0), "{planner}");
        let v = stdout_json(&out);
        assert_eq!(v["reached_goal"], 1, "{planner}");
        let last: Vec<f64> =
            serde_json::from_value(v["path"][v["path"].as_array().unwrap().len() - 1].clone())
                .unwrap();
        assert_eq!(last, goal.to_vec(), "{planner}");
    }
    // Named states are goals too; a bad one is refused naming the option.
    let v = stdout_json(&bundled_plan(&start, &goal, &["--other-goal", "home"]));
    assert_eq!(v["success"], true);
    let err = refused(&start, &goal, &["--other-goal", "[0.0, 1.0]"]);
    assert!(
        err.contains("--other-goal #1") && err.contains("6 joints"),
        "{err}"
    );
    let err = refused(
        &start,
        &goal,
        &["--other-goal", &in_table, "--other-goal", "nowhere"],
    );
    assert!(
        err.contains("--other-goal #2") && err.contains("nowhere"),
        "{err}"
    );
}

/// A MoveIt request whose goal constraints are two joint goals: a goal set. Its first goal in
/// collision, the plan ends at the second; a second goal lacking a joint is refused naming it.
#[test]
fn a_moveit_request_with_two_joint_goals_is_a_goal_set() {
    let (_, start, goal) = DEMO_QUERIES[0];
    let joints = |q: &[f64]| {
        ARM_JOINTS
            .iter()
            .zip(q)
            .map(|(n, v)| format!("      - {{joint_name: {n}, position: {v}}}\n"))
            .collect::<String>()
    };
    let yaml = |second: &str| {
        format!(
            "group_name: arm\nstart_state:\n  joint_state:\n    name: {names:?}\n    position: {start:?}\n\
             goal_constraints:\n  - joint_constraints:\n{}  - joint_constraints:\n{second}",
            joints(&[0.0, 2.0, 0.0, 0.0, 0.0, 0.0]),
            names = ARM_JOINTS,
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two_goals.yaml");
    std::fs::write(&path, yaml(&joints(&goal))).unwrap();
    let out = bundled(&["--request", path.to_str().unwrap()]);
    let v = stdout_json(&out);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["reached_goal"], 1);
    let path_v = v["path"].as_array().unwrap();
    let last: Vec<f64> = serde_json::from_value(path_v[path_v.len() - 1].clone()).unwrap();
    assert_eq!(last, goal.to_vec());

    std::fs::write(&path, yaml(&joints(&goal[..5]))).unwrap();
    let out = bundled(&["--request", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("goal_constraints[1]") && err.contains(ARM_JOINTS[5]),
        "{err}"
    );
}
