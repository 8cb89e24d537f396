//! `gmp bench mbm --concurrent N`: planning several MotionBenchMaker problems at once gives
//! every problem the result it gets when planned alone (planners are deterministic for a
//! seed and each problem has its own checker). Runs the built binary; skips without the data.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `gmp bench mbm` on the first Panda problem of every scene (CPU backend, a time limit
/// no problem reaches, so that no result depends on timing) and returns its JSON report.
fn bench(out: &Path, extra: &[&str]) -> Value {
    let status = Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(["bench", "mbm", "--robots", "panda", "--backend", "cpu"])
        .args(["--problems", "1", "--time-limit", "120", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("gmp runs");
    assert!(
        status.status.success(),
        "gmp bench mbm failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let json = std::fs::read_dir(out)
        .expect("output folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a JSON report");
    serde_json::from_str(&std::fs::read_to_string(&json).expect("report readable"))
        .expect("report parses")
}

/// The fields of a problem's record that must not depend on how many problems are in flight.
#[derive(Debug, PartialEq)]
struct Outcome {
    scene: String,
    index: u64,
    valid: bool,
    solved: bool,
    path_length_before: Value,
    path_length_after: Value,
    collision_checks: u64,
    configs_evaluated: Value,
}

fn outcome(r: &Value) -> Outcome {
    Outcome {
        scene: r["scene"].as_str().unwrap_or_default().to_string(),
        index: r["index"].as_u64().unwrap_or(0),
        valid: r["valid"].as_bool().unwrap_or(false),
        solved: r["solved"].as_bool().unwrap_or(false),
        path_length_before: r["path_length_before"].clone(),
        path_length_after: r["path_length_after"].clone(),
        collision_checks: r["collision_checks"].as_u64().unwrap_or(0),
        configs_evaluated: r["configs_evaluated"].clone(),
    }
}

fn outcomes(v: &Value) -> Vec<Outcome> {
    v.as_array()
        .expect("a list of problems")
        .iter()
        .map(outcome)
        .collect()
}

#[test]
fn concurrent_problems_get_their_sequential_results() {
    if common::mbm_or_skip("concurrent_problems_get_their_sequential_results").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (seq_dir, conc_dir) = (dir.path().join("sequential"), dir.path().join("concurrent"));
    let sequential = bench(&seq_dir, &[]);
    let concurrent = bench(&conc_dir, &["--concurrent", "3"]);

    let alone = outcomes(&sequential["problems"]["panda"]);
    assert_eq!(alone.len(), 7, "one problem per scene");
    assert!(
        alone.iter().filter(|o| o.solved).count() >= 6,
        "the first problems of the scenes are solved: {alone:?}"
    );
    assert!(sequential.get("concurrent_problems").is_none());
    // Both passes of the concurrent run give the results of the plain run.
    assert_eq!(outcomes(&concurrent["problems"]["panda"]), alone);
    assert_eq!(outcomes(&concurrent["concurrent_problems"]["panda"]), alone);
    let c = &concurrent["robots"]["panda"]["concurrent"];
    assert_eq!(c["in_flight"], 3);
    assert_eq!(c["problems"], 7);
    assert_eq!(c["identical"], 7, "{c}");
    assert!(c["wall_s"].as_f64().is_some_and(|w| w > 0.0), "{c}");

    // The markdown gives the measured figure instead of "not measured".
    let md = std::fs::read_dir(&conc_dir)
        .expect("output folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "md"))
        .expect("a markdown report");
    let md = std::fs::read_to_string(md).expect("markdown readable");
    assert!(md.contains("Concurrent (3 problems in flight"), "{md}");
    assert!(
        md.contains("identical to the sequential pass for 7 of 7"),
        "{md}"
    );
    assert!(!md.contains("not measured"), "{md}");
}

/// `--batched N` on the CPU backend: the shared-launch pass (one launch hub, two executors)
/// gives every problem its sequential result, and the report says how the rounds went.
#[test]
fn batched_problems_get_their_sequential_results() {
    if common::mbm_or_skip("batched_problems_get_their_sequential_results").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let v = bench(dir.path(), &["--batched", "4", "--hub-executors", "2"]);
    let alone = outcomes(&v["problems"]["panda"]);
    assert_eq!(alone.len(), 7, "one problem per scene");
    // A hub client does not count evaluated configurations: compare the rest.
    let strip = |o: Vec<Outcome>| -> Vec<Outcome> {
        o.into_iter()
            .map(|o| Outcome {
                configs_evaluated: Value::Null,
                ..o
            })
            .collect()
    };
    assert_eq!(
        strip(outcomes(&v["batched_problems"]["panda"])),
        strip(alone)
    );
    let b = &v["robots"]["panda"]["batched"];
    assert_eq!(b["in_flight"], 4);
    assert_eq!(b["identical"], 7, "{b}");
    let h = &b["hub"];
    assert_eq!(h["executors"], 2);
    assert!(h["rounds"].as_u64().is_some_and(|r| r > 0), "{h}");
    assert!(
        h["requests"].as_u64() >= h["rounds"].as_u64(),
        "every round answers at least one request: {h}"
    );
    assert_eq!(v["batched"]["supported"], true);
}

#[test]
fn bad_concurrency_and_batch_size_are_refused() {
    for args in [
        ["--concurrent", "0"],
        ["--batch-size", "0"],
        ["--batched", "0"],
        ["--hub-executors", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gmp"))
            .args(["bench", "mbm", "--robots", "panda"])
            .args(args)
            .output()
            .expect("gmp runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(args[0]), "{args:?}: {err}");
    }
}

/// `--indices` picks problems by their number in every selected scene; the report records
/// the selection and the RRT-Connect options.
#[test]
fn indices_select_problems_by_number() {
    if common::mbm_or_skip("indices_select_problems_by_number").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args(["bench", "mbm", "--robots", "panda", "--backend", "cpu"])
        .args(["--scenes", "box,table_pick", "--indices", "5,3"])
        .args([
            "--time-limit",
            "120",
            "--no-balance",
            "--device-escalate-after",
            "5",
        ])
        .args(["--out"])
        .arg(dir.path())
        .output()
        .expect("gmp runs");
    assert!(
        out.status.success(),
        "gmp bench mbm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read_dir(dir.path())
        .expect("output folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a JSON report");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report readable"))
            .expect("report parses");
    let mut picked: Vec<(String, u64)> = outcomes(&report["problems"]["panda"])
        .into_iter()
        .map(|o| (o.scene, o.index))
        .collect();
    picked.sort();
    let want: Vec<(String, u64)> = [("box", 3), ("box", 5), ("table_pick", 3), ("table_pick", 5)]
        .iter()
        .map(|&(s, i)| (s.to_string(), i))
        .collect();
    assert_eq!(picked, want);
    assert_eq!(report["indices"], serde_json::json!([5, 3]));
    assert_eq!(report["dynamic_domain"], true);
    assert_eq!(report["balance_trees"], false);
    // The device options are recorded as given (they act only with --on-device).
    assert_eq!(report["device_escalate_after"], 5);
    assert_eq!(report["device_extra_attempts"], Value::Null);
    assert_eq!(report["on_device"], false);
}

/// Several processes unpacking the problems into the same empty cache at once all succeed:
/// none removes or replaces the copy another one is already reading (the cache used to be
/// replaced by every process that finished unpacking, and a reader then found files missing).
#[test]
fn concurrent_processes_share_one_problem_cache() {
    let Some(data) = common::mbm_or_skip("concurrent_processes_share_one_problem_cache") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_gmp"))
                .args(["bench", "mbm", "--robots", "panda", "--backend", "cpu"])
                .args(["--scenes", "box", "--problems", "1", "--time-limit", "120"])
                .arg("--out")
                .arg(dir.path().join(format!("out{i}")))
                .env("GMP_CACHE", &cache)
                .env("GMP_DATA", &data)
                .spawn()
                .expect("gmp starts")
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("gmp runs");
        assert!(out.status.success(), "process {i}: {}", out.status);
    }
    assert!(cache.join("panda/.complete").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(&cache)
        .expect("cache readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "panda")
        .collect();
    assert!(leftovers.is_empty(), "left in the cache: {leftovers:?}");
}

/// Loading a selection (what `gmp bench mbm --scenes/--indices/--problems` does) asks about every
/// problem present once, in the full load's order, and gives exactly the full load's problems
/// that it keeps: the same numbers, start states, goals and obstacles.
#[test]
fn loading_a_selection_gives_the_full_loads_problems() {
    let Some(data) = common::mbm_or_skip("loading_a_selection_gives_the_full_loads_problems")
    else {
        return;
    };
    let full = gpu_motion_planner::mbm::load_problems(&data, "ur5").expect("problems load");
    let mut asked = Vec::new();
    let mut kept_in_cage = 0;
    let picked = gpu_motion_planner::mbm::load_problems_where(&data, "ur5", |scene, index| {
        asked.push((scene.to_string(), index));
        let keep = (scene == "cage" && kept_in_cage < 3) || (scene == "box" && index == 7);
        kept_in_cage += usize::from(keep && scene == "cage");
        keep
    })
    .expect("selection loads");
    let all: Vec<(String, usize)> = full
        .iter()
        .map(|p| (p.scene_name.clone(), p.index))
        .collect();
    assert_eq!(asked, all);
    let want: Vec<_> = full
        .iter()
        .filter(|p| p.scene_name == "box" && p.index == 7)
        .chain(full.iter().filter(|p| p.scene_name == "cage").take(3))
        .collect();
    assert_eq!(picked.len(), 4);
    assert_eq!(picked.len(), want.len());
    for (p, w) in picked.iter().zip(&want) {
        assert_eq!((&p.scene_name, p.index), (&w.scene_name, w.index));
        assert_eq!(p.start_state, w.start_state);
        assert_eq!(p.goal, w.goal);
        assert_eq!(p.group_name, w.group_name);
        assert_eq!(
            format!("{:?}", p.scene.slots()),
            format!("{:?}", w.scene.slots())
        );
    }
}
