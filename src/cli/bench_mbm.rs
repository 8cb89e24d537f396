//! `gmp bench mbm`: plans the MotionBenchMaker problems (7 scenes x 100 per robot) and reports
//! per robot and scene: solved / valid / total, planning time, simplification time, path
//! length before and after shortcutting and collision checks per problem. Writes
//! `<out>/mbm_<planner>_<backend>_<date>.json` and `.md`.
//!
//! With `--concurrent N` the selected problems are planned a second time with N of them in
//! flight (a scoped pool of N threads, each problem with its own checker, as in the
//! sequential pass), and the report gives the wall time of both passes side by side and
//! whether every problem's result (solved, path lengths, checks) is the same in both.
//!
//! With `--batched N` they are planned once more with N in flight sharing collision-check
//! launches through one [`LaunchHub`] (see `collision::hub`), with the same comparison.
//!
//! A benchmark, not a test: it measures and reports, it asserts nothing about timings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use serde_json::{json, Value};

use super::tuning::PlannerTuning;
use super::{parse_shapes, shapes_for, CliError};
use crate::collision::hub::{BatchExecutor, HubOptions, HubStats, LaunchHub};
use crate::collision::{Checker, CheckerOptions, ConfigBatch};
use crate::planners::{plan, PlanRequest, PlannerId};
use crate::robot::spherize::SphereFit;

/// `gmp bench mbm` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchMbmArgs {
    /// Robots to run (panda, ur5, fetch).
    #[arg(long, value_delimiter = ',', default_value = "panda,ur5,fetch")]
    pub robots: Vec<String>,
    /// Scenes to run (default: all seven).
    #[arg(long, value_delimiter = ',')]
    pub scenes: Vec<String>,
    /// Problems per scene (the first N; 100 = all).
    #[arg(long, default_value_t = 100)]
    pub problems: usize,
    /// Only these problem numbers (1-based, as in the file names) of each selected scene;
    /// `--problems` still caps how many per scene. Empty = all.
    #[arg(long, value_delimiter = ',')]
    pub indices: Vec<usize>,
    /// Planner: prm, lazy_prm, rrt, rrt_star or rrt_connect.
    #[arg(long, default_value = "rrt_connect")]
    pub planner: String,
    /// Backend: auto (hybrid with a GPU, else cpu), cpu, cuda or hybrid (small calls on the CPU, large ones on the GPU).
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Robot geometry: polytopes (URDF collision meshes), spheres (the spherized URDF, as
    /// VAMP uses) or fitted (a sphere model fitted to the collision meshes, `gmp spherize`).
    #[arg(long, default_value = "polytopes")]
    pub shapes: String,
    /// `--shapes fitted`: how far (m) a fitted sphere may stick out of its collision body.
    #[arg(long, default_value_t = SphereFit::default().tolerance)]
    pub sphere_tolerance: f64,
    /// `--shapes fitted`: most spheres per collision body.
    #[arg(long, default_value_t = SphereFit::default().max_per_body)]
    pub max_spheres: usize,
    /// Planning time limit per problem, seconds.
    #[arg(long = "time-limit", default_value_t = 2.0)]
    pub time_limit: f64,
    /// Seed of every problem's planner run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Motion-check resolution (joint-space distance).
    #[arg(long, default_value_t = 0.02)]
    pub resolution: f64,
    /// Checker worker threads (1 = one core, as the published single-core figures).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Planner tuning (shared with `gmp plan`).
    #[command(flatten)]
    pub tuning: PlannerTuning,
    /// Also plan the selected problems with this many in flight at once (one checker per
    /// problem; on the CUDA backend each checker has its own stream) and report the wall time
    /// next to the sequential pass.
    #[arg(long)]
    pub concurrent: Option<usize>,
    /// Also plan the selected problems with this many in flight sharing collision-check
    /// launches (one launch hub over every selected problem's scene, `collision::hub`: on the
    /// CUDA backend one launch holds the waiting checks of every problem in flight; on the CPU
    /// backend the hub's executor runs them one after another) and report the wall time next to
    /// the sequential pass.
    #[arg(long)]
    pub batched: Option<usize>,
    /// Longest wait of a shared-launch request for the other problems' requests, microseconds
    /// (`--batched`).
    #[arg(long = "hub-wait-us", default_value_t = 50)]
    pub hub_wait_us: u64,
    /// Executors of the shared launches (`--batched`), each with its own dispatcher thread,
    /// stream and buffers: with 2, one round gathers while the other runs.
    /// Default from results/mbm/batched_H200_2026-11-22 (Panda: 1 -> 3 executors, 0.82 s ->
    /// 0.57 s for all 700 problems).
    #[arg(long = "hub-executors", default_value_t = 3)]
    pub hub_executors: usize,
    /// Output folder.
    #[arg(long, default_value = "results/mbm")]
    pub out: PathBuf,
}

/// The outcome of one problem.
#[derive(Clone, Debug, Serialize)]
pub struct ProblemRecord {
    /// Scene name.
    pub scene: String,
    /// Problem number (1-based).
    pub index: usize,
    /// Start and goal collision free under our checker.
    pub valid: bool,
    /// A validated trajectory was returned.
    pub solved: bool,
    /// Planning time, seconds.
    pub planning_time: f64,
    /// Shortcutting, timing and re-validation, seconds.
    pub simplification_time: f64,
    /// Wall time of the whole `plan` call, seconds.
    pub total_time: f64,
    /// Building the checker for the problem's scene, seconds (not in the times above).
    pub setup_time: f64,
    /// Raw path length (joint space).
    pub path_length_before: f64,
    /// Shortcut path length.
    pub path_length_after: f64,
    /// Duration of the timed trajectory, seconds (with `--path-tolerance`, through rounded
    /// corners).
    pub trajectory_duration: f64,
    /// Configurations checked (every step of every motion asked for, at the resolution).
    pub collision_checks: u64,
    /// Configurations the checker actually evaluated for the plan (early exits and
    /// refinements included), where the backend counts them.
    pub configs_evaluated: Option<u64>,
    /// Samples per planner iteration.
    pub batch_size: usize,
    /// With parallel attempts (`--attempts`): the attempt whose path was returned.
    pub winning_attempt: usize,
    /// Planner iterations of the returned path (batches; on the device, the winning attempt's).
    pub iterations: usize,
    /// With `--on-device`: the launch's time on the device's clock, seconds (the rest of
    /// `planning_time` is the host's).
    pub device_time: Option<f64>,
    /// Why planning failed, when it did.
    pub error: Option<String>,
}

impl ProblemRecord {
    /// What differs between two runs of the same problem, leaving out the timings: `None`
    /// when solved flags, path lengths and check counts are all the same.
    pub fn difference(&self, other: &ProblemRecord) -> Option<String> {
        let mut d = Vec::new();
        if self.valid != other.valid {
            d.push(format!("valid {} vs {}", self.valid, other.valid));
        }
        if self.solved != other.solved {
            // The rest follows; a plan cut short by the time limit in one pass only.
            return Some(format!(
                "{} {}: solved {} vs {}",
                self.scene, self.index, self.solved, other.solved
            ));
        }
        if self.path_length_before.to_bits() != other.path_length_before.to_bits() {
            d.push(format!(
                "raw length {} vs {}",
                self.path_length_before, other.path_length_before
            ));
        }
        if self.path_length_after.to_bits() != other.path_length_after.to_bits() {
            d.push(format!(
                "length {} vs {}",
                self.path_length_after, other.path_length_after
            ));
        }
        if self.trajectory_duration.to_bits() != other.trajectory_duration.to_bits() {
            d.push(format!(
                "duration {} vs {}",
                self.trajectory_duration, other.trajectory_duration
            ));
        }
        if self.collision_checks != other.collision_checks {
            d.push(format!(
                "checks {} vs {}",
                self.collision_checks, other.collision_checks
            ));
        }
        // Only where both passes count them (a shared-launch client does not).
        if let (Some(a), Some(b)) = (self.configs_evaluated, other.configs_evaluated) {
            if a != b {
                d.push(format!("evaluated {a} vs {b}"));
            }
        }
        (!d.is_empty()).then(|| format!("{} {}: {}", self.scene, self.index, d.join(", ")))
    }
}

/// Median, mean, 95th percentile and maximum of `v` (zeros when empty).
pub fn summary(v: &[f64]) -> Value {
    if v.is_empty() {
        return json!({"n": 0, "median": null, "mean": null, "p95": null, "max": null});
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
        s[i]
    };
    let median = if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2])
    };
    json!({
        "n": s.len(),
        "median": median,
        "mean": s.iter().sum::<f64>() / s.len() as f64,
        "p95": pick(0.95),
        "max": s[s.len() - 1],
    })
}

fn group_summary(records: &[&ProblemRecord]) -> Value {
    let solved: Vec<&&ProblemRecord> = records.iter().filter(|r| r.solved).collect();
    let col =
        |f: &dyn Fn(&ProblemRecord) -> f64| -> Vec<f64> { solved.iter().map(|r| f(r)).collect() };
    json!({
        "solved": solved.len(),
        "valid": records.iter().filter(|r| r.valid).count(),
        "total": records.len(),
        "planning_time_s": summary(&col(&|r| r.planning_time)),
        "simplification_time_s": summary(&col(&|r| r.simplification_time)),
        "path_length_before": summary(&col(&|r| r.path_length_before)),
        "path_length_after": summary(&col(&|r| r.path_length_after)),
        "trajectory_duration_s": summary(&col(&|r| r.trajectory_duration)),
        "collision_checks": summary(&col(&|r| r.collision_checks as f64)),
        "configs_evaluated": summary(
            &solved
                .iter()
                .filter_map(|r| r.configs_evaluated.map(|v| v as f64))
                .collect::<Vec<_>>()
        ),
        "iterations": summary(&col(&|r| r.iterations as f64)),
        "device_time_s": summary(
            &solved
                .iter()
                .filter_map(|r| r.device_time)
                .collect::<Vec<_>>()
        ),
    })
}

pub use crate::report::{machine_info, utc_date};

fn ms(v: &Value) -> String {
    v.as_f64()
        .map(|x| format!("{:.3}", x * 1e3))
        .unwrap_or_else(|| "-".into())
}

fn num(v: &Value, digits: usize) -> String {
    v.as_f64()
        .map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn markdown(report: &Value) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "# MotionBenchMaker: {} on {} ({})\n\n",
        report["planner"].as_str().unwrap_or(""),
        report["backend"].as_str().unwrap_or(""),
        report["date"].as_str().unwrap_or("")
    ));
    s.push_str(&format!(
        "Machine: {} ({} cores). Shapes: {}. Time limit {} s per problem, resolution {}, seed {}, checker threads {}, batch size {}.\n\n",
        report["machine"]["cpu"].as_str().unwrap_or("?"),
        report["machine"]["cores"],
        report["shapes"].as_str().unwrap_or(""),
        report["time_limit_s"],
        report["resolution"],
        report["seed"],
        report["threads"],
        report["batch_size"],
    ));
    s.push_str(&format!(
        "Command: `{}`\n\n",
        report["command"].as_str().unwrap_or("")
    ));
    s.push_str(
        "Times in milliseconds over solved problems. Lengths in joint-space radians/metres. Checks: configurations of the motions asked for at the resolution; evaluated: configurations the checker computed (early exits and refinements included; CPU backend only).\n\n",
    );
    s.push_str("| robot | scene | solved | valid | total | plan median | plan mean | plan p95 | plan max | simplify median | simplify mean | length before | length after | duration mean (s) | checks / problem | evaluated / problem |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    if let Some(robots) = report["robots"].as_object() {
        for (robot, r) in robots {
            let mut rows: Vec<(String, &Value)> = r["scenes"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v)).collect())
                .unwrap_or_default();
            rows.push(("**all**".into(), &r["all"]));
            for (scene, v) in rows {
                s.push_str(&format!(
                    "| {robot} | {scene} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    v["solved"],
                    v["valid"],
                    v["total"],
                    ms(&v["planning_time_s"]["median"]),
                    ms(&v["planning_time_s"]["mean"]),
                    ms(&v["planning_time_s"]["p95"]),
                    ms(&v["planning_time_s"]["max"]),
                    ms(&v["simplification_time_s"]["median"]),
                    ms(&v["simplification_time_s"]["mean"]),
                    num(&v["path_length_before"]["mean"], 2),
                    num(&v["path_length_after"]["mean"], 2),
                    num(&v["trajectory_duration_s"]["mean"], 3),
                    num(&v["collision_checks"]["mean"], 0),
                    num(&v["configs_evaluated"]["mean"], 0),
                ));
            }
        }
        s.push_str("\nSequential totals (every valid problem planned one after another; plan + simplify, checker set-up excluded):\n\n");
        for (robot, r) in robots {
            s.push_str(&format!(
                "- {robot}: {} s for {} problems ({} s including checker set-up; wall time of the pass {} s)\n",
                num(&r["sequential_total_s"], 3),
                r["all"]["valid"],
                num(&r["sequential_total_with_setup_s"], 3),
                num(&r["sequential_wall_s"], 3),
            ));
        }
        for (robot, r) in robots {
            let d = &r["all"]["device_time_s"];
            if d["median"].is_null() {
                continue;
            }
            s.push_str(&format!(
                "\nOn the device, one problem per launch ({robot}): device time median {} ms, mean {} ms, p95 {} ms, max {} ms; the winner's iterations median {}, p95 {}. The rest of the planning time is the host's (start and goal checks, copies, the launch).\n",
                ms(&d["median"]),
                ms(&d["mean"]),
                ms(&d["p95"]),
                ms(&d["max"]),
                num(&r["all"]["iterations"]["median"], 1),
                num(&r["all"]["iterations"]["p95"], 1),
            ));
        }
        if let Some(n) = report["concurrent"]["in_flight"].as_u64() {
            s.push_str(&format!(
                "\nConcurrent ({n} problems in flight, each with its own checker; wall time of the pass, checker set-up included, next to the sequential pass):\n\n"
            ));
            for (robot, r) in robots {
                let c = &r["concurrent"];
                s.push_str(&format!(
                    "- {robot}: {} s for {} problems vs {} s one after another ({}x); results (solved, path lengths, checks) identical to the sequential pass for {} of {} problems{}\n",
                    num(&c["wall_s"], 3),
                    c["problems"],
                    num(&r["sequential_wall_s"], 3),
                    num(&c["speedup"], 2),
                    c["identical"],
                    c["problems"],
                    differences_note(c),
                ));
            }
            s.push_str(&format!(
                "\n{}\n",
                report["concurrent"]["note"].as_str().unwrap_or("")
            ));
        }
    }
    s.push_str(&format!(
        "\nBatched (all problems sharing launches): {}\n",
        report["batched"]["note"].as_str().unwrap_or("")
    ));
    if let Some(robots) = report["robots"].as_object() {
        for (robot, r) in robots {
            let b = &r["batched"];
            if b.is_null() {
                continue;
            }
            if b["mode"] == "device" {
                s.push_str(&format!(
                    "\n- {robot}: one device launch for {} valid problems: {} s (their planning times one after another: {} s, {}x); solved {}, re-validated on the CPU {}, raw paths identical to the sequential pass {}; per-problem device time median {} ms, max {} ms; {} warps per attempt, {} attempts per problem (+{} after {} iterations without a path) ({}); set-up {} s, CPU re-validation {} s\n",
                    b["problems"],
                    num(&b["wall_s"], 4),
                    num(&b["sequential_planning_s"], 3),
                    num(&b["speedup"], 2),
                    b["solved"],
                    b["revalidated_on_cpu"],
                    b["identical_raw_paths_to_sequential"],
                    num(&(b["device_us_median"].as_f64().unwrap_or(0.0) / 1000.0).into(), 3),
                    num(&(b["device_us_max"].as_f64().unwrap_or(0.0) / 1000.0).into(), 3),
                    b["warps"],
                    b["attempts"],
                    b["extra_attempts"],
                    b["escalate_after"],
                    b["kernel"].as_str().unwrap_or("-"),
                    num(&b["setup_s"], 3),
                    num(&b["cpu_revalidation_s"], 3),
                ));
                continue;
            }
            let h = &b["hub"];
            s.push_str(&format!(
                "\n- {robot}: {} s for {} problems vs {} s one after another ({}x); hub set-up {} s; {} executors; {} rounds, {} requests per round, {} configurations and {} motions checked, {} rounds started by the wait limit, device busy {} ms; results identical to the sequential pass for {} of {} problems{}\n",
                num(&b["wall_s"], 3),
                b["problems"],
                num(&b["sequential_wall_s"], 3),
                num(&b["speedup"], 2),
                num(&b["setup_s"], 3),
                h["executors"],
                h["rounds"],
                num(&h["requests_per_round"], 1),
                h["configs"],
                h["motions"],
                h["timed_out_rounds"],
                num(&h["device_ms"], 1),
                b["identical"],
                b["problems"],
                differences_note(b),
            ));
        }
    }
    s.push_str(&format!(
        "\nPublished anchor (VAMP, RRT-Connect, spheres, one core): {}\n",
        report["anchor"].as_str().unwrap_or("")
    ));
    s
}

/// One problem of one pass: its record, the wall time of its `plan` call and of building its
/// checker.
struct Outcome {
    record: ProblemRecord,
    plan_time: f64,
    setup_time: f64,
}

/// Builds the problem's checker, checks its start and goal and plans it.
fn solve_problem(
    a: &BenchMbmArgs,
    r: &crate::mbm::MbmRobot,
    p: &crate::mbm::Problem,
    planner: PlannerId,
    shapes: crate::collision::RobotShapes,
) -> Result<Outcome, CliError> {
    let setup_start = Instant::now();
    let checker = super::mbm_backend_checker(&a.backend, r, p, shapes, a.threads)?;
    if a.tuning.on_device {
        // The hybrid backend starts its GPU side at its first large call: start it here, with
        // the checker's other set-up, rather than inside the planning time.
        let _ = checker.device_planner();
    }
    let setup_time = setup_start.elapsed().as_secs_f64();
    solve_with(a, r, p, planner, checker.as_ref(), setup_time)
}

/// The planning request of the bench's options for one problem.
fn request_for(
    a: &BenchMbmArgs,
    r: &crate::mbm::MbmRobot,
    start: Vec<f64>,
    goal: Vec<f64>,
    planner: PlannerId,
) -> PlanRequest {
    let mut req = PlanRequest::new(start, goal, planner);
    req.seed = a.seed;
    req.time_limit = Duration::from_secs_f64(a.time_limit);
    req.resolution = a.resolution;
    a.tuning.apply(&mut req);
    req.group = r.group.name.clone();
    req
}

/// Checks the problem's start and goal with `checker` and plans it.
fn solve_with(
    a: &BenchMbmArgs,
    r: &crate::mbm::MbmRobot,
    p: &crate::mbm::Problem,
    planner: PlannerId,
    checker: &dyn Checker,
    setup_time: f64,
) -> Result<Outcome, CliError> {
    let (start, goal) = r.start_goal(p)?;
    let ends = ConfigBatch::from_rows(start.len(), &[&start, &goal])?;
    let v = checker.check_configs(&ends)?;
    let valid = v.iter().all(|x| *x);
    let req = request_for(a, r, start, goal, planner);
    let batch_size = req.batch_size_on(checker.backend());
    let mut rec = ProblemRecord {
        scene: p.scene_name.clone(),
        index: p.index,
        valid,
        solved: false,
        planning_time: 0.0,
        simplification_time: 0.0,
        total_time: 0.0,
        setup_time,
        path_length_before: 0.0,
        path_length_after: 0.0,
        trajectory_duration: 0.0,
        collision_checks: 0,
        configs_evaluated: None,
        batch_size,
        winning_attempt: 0,
        iterations: 0,
        device_time: None,
        error: None,
    };
    let mut plan_time = 0.0;
    if valid && a.tuning.on_device {
        // The device planner's buffers, allocated before timing as a long-lived checker (the
        // node's) has them: a run from the start to itself.
        if let Some(d) = checker.device_planner() {
            let s = crate::planners::device::settings_for_request(
                &req,
                checker.space(),
                Duration::from_secs(1),
            );
            let _ = d.rrt_connect(&[(&req.start, &req.start)], &s);
        }
    }
    if valid {
        let evaluated_before = checker.configs_evaluated();
        let t = Instant::now();
        let out = plan(checker, &req);
        plan_time = t.elapsed().as_secs_f64();
        rec.total_time = plan_time;
        match out {
            Ok(res) => {
                rec.solved = true;
                rec.planning_time = res.stats.planning_time.as_secs_f64();
                rec.simplification_time = res.stats.simplification_time.as_secs_f64();
                rec.path_length_before = res.stats.path_length_before;
                rec.path_length_after = res.stats.path_length_after;
                rec.trajectory_duration = res.trajectory.duration();
                rec.collision_checks = res.stats.collision_checks;
                rec.winning_attempt = res.stats.winning_attempt;
                rec.iterations = res.stats.iterations;
                rec.device_time = res.stats.device_time.map(|d| d.as_secs_f64());
                rec.configs_evaluated = checker
                    .configs_evaluated()
                    .zip(evaluated_before)
                    .map(|(after, before)| after.saturating_sub(before));
            }
            Err(e) => rec.error = Some(e.to_string()),
        }
    } else {
        rec.error = Some(format!(
            "invalid problem: start {} goal {}",
            if v.first() == Some(&true) {
                "free"
            } else {
                "in collision"
            },
            if v.get(1) == Some(&true) {
                "free"
            } else {
                "in collision"
            }
        ));
    }
    Ok(Outcome {
        record: rec,
        plan_time,
        setup_time,
    })
}

/// Loads the problems `a` selects (its scenes, its indices, at most `a.problems` per scene), in
/// the benchmark's order; the others are not parsed.
fn load_selected(
    a: &BenchMbmArgs,
    data: &Path,
    name: &str,
) -> Result<Vec<crate::mbm::Problem>, CliError> {
    let mut per_scene: BTreeMap<String, usize> = BTreeMap::new();
    let keep = |scene: &str, index: usize| {
        if !a.scenes.is_empty() && !a.scenes.iter().any(|s| s == scene) {
            return false;
        }
        if !a.indices.is_empty() && !a.indices.contains(&index) {
            return false;
        }
        let count = per_scene.entry(scene.to_string()).or_default();
        if *count >= a.problems {
            return false;
        }
        *count += 1;
        true
    };
    Ok(crate::mbm::load_problems_where(data, name, keep)?)
}

/// Solves `selected` with `in_flight` problems at once: a scoped pool of that many threads,
/// each taking the next problem in order and solving it with `solve` (given its index in
/// `selected`). Outcomes come back in the order of `selected`.
fn solve_concurrently(
    selected: &[&crate::mbm::Problem],
    in_flight: usize,
    solve: impl Fn(usize, &crate::mbm::Problem) -> Result<Outcome, CliError> + Sync,
) -> Result<Vec<Outcome>, CliError> {
    let next = AtomicUsize::new(0);
    let workers = in_flight.clamp(1, selected.len().max(1));
    let results: Vec<Vec<(usize, Result<Outcome, CliError>)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                sc.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = selected.get(i) else {
                            return done;
                        };
                        let out = solve(i, p);
                        let failed = out.is_err();
                        done.push((i, out));
                        if failed {
                            // Let the other workers finish their problems; take no more.
                            next.store(selected.len(), Ordering::Relaxed);
                            return done;
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        Err(CliError("a benchmark worker thread panicked".into())),
                    )]
                })
            })
            .collect()
    });
    let mut all: Vec<(usize, Result<Outcome, CliError>)> = results.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, o)| o).collect()
}

/// The outcome of one robot: the sequential records, its totals and the concurrent pass.
struct RobotRun {
    records: Vec<ProblemRecord>,
    sequential: f64,
    with_setup: f64,
    sequential_wall: f64,
    concurrent: Option<Value>,
    concurrent_records: Option<Vec<ProblemRecord>>,
    batched: Option<Value>,
    batched_records: Option<Vec<ProblemRecord>>,
}

fn run_robot(
    a: &BenchMbmArgs,
    data: &Path,
    name: &str,
    planner: PlannerId,
) -> Result<RobotRun, CliError> {
    let mut r = crate::mbm::load_robot(data, name)?;
    let fit = super::sphere_fit(a.sphere_tolerance, a.max_spheres)?;
    let shapes = shapes_for(&mut r.model, &a.shapes, &fit)?;
    let loaded = load_selected(a, data, name)?;
    let selected: Vec<&crate::mbm::Problem> = loaded.iter().collect();
    let mut records = Vec::new();
    let mut sequential = 0.0;
    let mut with_setup = 0.0;
    let wall = Instant::now();
    for p in &selected {
        let o = solve_problem(a, &r, p, planner, shapes)?;
        // One line per problem as it finishes, so that a run cut short (a time limit on the
        // GPU machine) still leaves its per-problem results in the log.
        if let Ok(line) = serde_json::to_string(&o.record) {
            eprintln!("bench mbm: {name} problem {line}");
        }
        if o.record.valid {
            sequential += o.plan_time;
            with_setup += o.plan_time + o.setup_time;
        }
        records.push(o.record);
    }
    let sequential_wall = wall.elapsed().as_secs_f64();
    let mut run = RobotRun {
        records,
        sequential,
        with_setup,
        sequential_wall,
        concurrent: None,
        concurrent_records: None,
        batched: None,
        batched_records: None,
    };
    if let Some(n) = a.concurrent {
        eprintln!(
            "bench mbm: {name}: {} problems, {n} in flight ...",
            selected.len()
        );
        let wall = Instant::now();
        let outcomes = solve_concurrently(&selected, n, |_, p| {
            solve_problem(a, &r, p, planner, shapes)
        })?;
        let wall_s = wall.elapsed().as_secs_f64();
        let concurrent: Vec<ProblemRecord> = outcomes.into_iter().map(|o| o.record).collect();
        let mut v = compare_pass(&run.records, &concurrent, wall_s, sequential_wall);
        v["in_flight"] = json!(n);
        run.concurrent = Some(v);
        run.concurrent_records = Some(concurrent);
    }
    if let (Some(_), true) = (a.batched, a.tuning.on_device) {
        let v = device_batched_pass(a, &r, &selected, &run.records, shapes, sequential_wall)?;
        run.batched = Some(v);
    } else if let Some(n) = a.batched {
        eprintln!(
            "bench mbm: {name}: {} problems, {n} in flight sharing launches ...",
            selected.len()
        );
        let wall = Instant::now();
        let hub = launch_hub(a, &r, &selected, shapes)?;
        let setup_s = wall.elapsed().as_secs_f64();
        let outcomes = solve_concurrently(&selected, n, |i, p| {
            let c = hub.client(i)?;
            solve_with(a, &r, p, planner, &c, 0.0)
        })?;
        let wall_s = wall.elapsed().as_secs_f64();
        let batched: Vec<ProblemRecord> = outcomes.into_iter().map(|o| o.record).collect();
        let st = hub.stats();
        let mut v = compare_pass(&run.records, &batched, wall_s, sequential_wall);
        v["in_flight"] = json!(n);
        v["setup_s"] = json!(setup_s);
        v["hub"] = hub_summary(&st, a.hub_wait_us, a.hub_executors);
        run.batched = Some(v);
        run.batched_records = Some(batched);
    }
    Ok(run)
}

/// `--on-device --batched`: every valid problem of `selected` planned by the device
/// RRT-Connect in one launch (each problem in its own scene; `gpu::hub::CudaBatch`),
/// each raw path then re-validated on the CPU (its motions at the resolution, with a CPU
/// checker of its scene) and compared with the raw path of the sequential pass (the same seed
/// gives the same plan).
fn device_batched_pass(
    a: &BenchMbmArgs,
    r: &crate::mbm::MbmRobot,
    selected: &[&crate::mbm::Problem],
    records: &[ProblemRecord],
    shapes: crate::collision::RobotShapes,
    sequential_wall: f64,
) -> Result<Value, CliError> {
    let opts = CheckerOptions {
        shapes,
        threads: a.threads,
        ..Default::default()
    };
    let space = &r.group.space;
    let mut ends = Vec::new();
    let mut scene_of = Vec::new();
    let mut picked = Vec::new();
    for (i, (p, rec)) in selected.iter().zip(records).enumerate() {
        if rec.valid {
            ends.push(r.start_goal(p)?);
            scene_of.push(i as u32);
            picked.push(i);
        }
    }
    eprintln!(
        "bench mbm: {}: {} valid problems in one device launch ...",
        r.name,
        picked.len()
    );
    let t_setup = Instant::now();
    let mut exec = cuda_batch(r, selected, opts)?;
    let req = request_for(a, r, Vec::new(), Vec::new(), PlannerId::RrtConnect);
    let settings = crate::planners::device::settings_for_request(&req, space, req.time_limit);
    let pairs: Vec<(&[f64], &[f64])> = ends
        .iter()
        .map(|(s, g)| (s.as_slice(), g.as_slice()))
        .collect();
    // Buffers for the whole batch, before timing (a run of every start to itself).
    let warm: Vec<(&[f64], &[f64])> = pairs.iter().map(|(s, _)| (*s, *s)).collect();
    exec.rrt_connect(space, &warm, &scene_of, &settings)?;
    let setup_s = t_setup.elapsed().as_secs_f64();
    let t = Instant::now();
    let outcomes = exec.rrt_connect(space, &pairs, &scene_of, &settings)?;
    let launch_s = t.elapsed().as_secs_f64();
    // Re-validation on the CPU (the problems spread over the host's cores, a checker of its
    // own scene for each), and the comparison with the sequential pass.
    let t_check = Instant::now();
    let revalidated = crate::planners::batch::parallel_map(outcomes.len(), |k| {
        let o = &outcomes[k];
        if o.status != crate::planners::device::DeviceStatus::Solved {
            return Ok(false);
        }
        let p = selected[picked[k]];
        let cpu = crate::collision::CpuChecker::new(
            &r.model,
            &r.group,
            &r.start_full_state(p),
            &p.scene,
            opts,
        )?;
        let mut motions = crate::collision::MotionBatch::new(space.dof());
        for w in o.path.windows(2) {
            motions.push(&w[0], &w[1])?;
        }
        Ok::<bool, CliError>(
            cpu.check_motions(&motions, a.resolution)?
                .iter()
                .all(|&v| v),
        )
    });
    let mut solved = 0;
    let mut validated = 0;
    let mut identical = 0;
    let mut device_us = Vec::new();
    let mut per_problem = Vec::new();
    for (k, o) in outcomes.iter().enumerate() {
        let i = picked[k];
        let p = selected[i];
        device_us.push(f64::from(o.device_us));
        let mut ok = false;
        let mut raw_length = None;
        if o.status == crate::planners::device::DeviceStatus::Solved {
            solved += 1;
            ok = match &revalidated[k] {
                Ok(v) => *v,
                Err(e) => return Err(CliError(e.0.clone())),
            };
            if ok {
                validated += 1;
            }
            let len = crate::trajectory::path_length(space, &o.path);
            if records[i].solved && records[i].path_length_before.to_bits() == len.to_bits() {
                identical += 1;
            }
            raw_length = Some(len);
        }
        per_problem.push(json!({
            "scene": p.scene_name,
            "index": p.index,
            "status": o.status,
            "revalidated": ok,
            "raw_length": raw_length,
            "iterations": o.iterations,
            "attempt": o.attempt,
            "vertices": o.vertices,
            "motions": o.motions,
            "configs": o.configs,
            "device_us": o.device_us,
        }));
    }
    let check_s = t_check.elapsed().as_secs_f64();
    device_us.sort_by(f64::total_cmp);
    let median_us = device_us.get(device_us.len() / 2).copied().unwrap_or(0.0);
    // The sequential pass's planning times of the same problems (the device planner one
    // problem per launch, or the host planner without --on-device).
    let sequential_planning: f64 = picked.iter().map(|&i| records[i].planning_time).sum();
    let max_us = device_us.last().copied().unwrap_or(0.0);
    Ok(json!({
        "mode": "device",
        "problems": picked.len(),
        "solved": solved,
        "revalidated_on_cpu": validated,
        "identical_raw_paths_to_sequential": identical,
        "wall_s": launch_s,
        "sequential_wall_s": sequential_wall,
        "sequential_planning_s": sequential_planning,
        "speedup": if launch_s > 0.0 { sequential_planning / launch_s } else { 0.0 },
        "setup_s": setup_s,
        "cpu_revalidation_s": check_s,
        "cpu_revalidation_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "device_us_median": median_us,
        "device_us_max": max_us,
        "warps": settings.warps,
        "attempts": settings.attempts,
        "extra_attempts": settings.extra_attempts,
        "escalate_after": settings.escalate_after,
        "tree_capacity": settings.tree_capacity,
        "kernel": exec.rrt_connect_resources(settings.warps),
        "note": "Every valid problem planned by the device RRT-Connect in one launch (each problem in its own scene, its attempts one block each); wall_s is that launch with its copies; each returned raw path is then re-validated on the CPU, the problems spread over cpu_revalidation_threads threads (cpu_revalidation_s, not in wall_s). Shortcutting is not part of this pass.",
        "per_problem": per_problem,
    }))
}

/// " (different: ...)" listing a pass's differences from the sequential pass, or nothing.
fn differences_note(pass: &Value) -> String {
    pass["differences"]
        .as_array()
        .filter(|d| !d.is_empty())
        .map(|d| {
            let items: Vec<&str> = d.iter().filter_map(|x| x.as_str()).collect();
            format!(" (different: {})", items.join("; "))
        })
        .unwrap_or_default()
}

/// A second pass over the problems next to the sequential one: wall times and whether each
/// problem's result is the same.
fn compare_pass(
    sequential: &[ProblemRecord],
    other: &[ProblemRecord],
    wall_s: f64,
    sequential_wall: f64,
) -> Value {
    let differences: Vec<String> = sequential
        .iter()
        .zip(other)
        .filter_map(|(s, c)| s.difference(c))
        .collect();
    json!({
        "problems": other.len(),
        "wall_s": wall_s,
        "sequential_wall_s": sequential_wall,
        "speedup": if wall_s > 0.0 { sequential_wall / wall_s } else { 0.0 },
        "identical": other.len() - differences.len(),
        "differences": differences,
    })
}

/// A CUDA executor holding the scene of every problem of `selected` (index `i` is scene `i`)
/// on device 0.
fn cuda_batch(
    r: &crate::mbm::MbmRobot,
    selected: &[&crate::mbm::Problem],
    opts: CheckerOptions,
) -> Result<crate::gpu::hub::CudaBatch, CliError> {
    let problems: Vec<(Vec<f64>, &crate::scene::Scene)> = selected
        .iter()
        .map(|p| (r.start_full_state(p), &p.scene))
        .collect();
    Ok(crate::gpu::hub::CudaBatch::new(
        &r.model,
        &r.group,
        &problems,
        opts,
        crate::gpu::CudaOptions::from_env(),
        0,
    )?)
}

/// The launch hub of a batched pass over `selected`: its executor holds every problem's scene
/// (index `i` of `selected` is scene `i`), on the GPU for `--backend cuda` or `hybrid` (and `auto` with a
/// GPU), else on the CPU.
fn launch_hub(
    a: &BenchMbmArgs,
    r: &crate::mbm::MbmRobot,
    selected: &[&crate::mbm::Problem],
    shapes: crate::collision::RobotShapes,
) -> Result<LaunchHub, CliError> {
    let opts = CheckerOptions {
        shapes,
        threads: a.threads,
        ..Default::default()
    };
    let cuda = match a.backend.as_str() {
        "cuda" | "hybrid" => true,
        "auto" => crate::gpu::gpu_available(),
        _ => false,
    };
    let mut executors: Vec<Box<dyn BatchExecutor>> = Vec::new();
    if cuda {
        for _ in 0..a.hub_executors {
            let exec = cuda_batch(r, selected, opts)?;
            if executors.is_empty() {
                eprintln!(
                    "bench mbm: shared launches on {} ({} kernels, {} executors)",
                    exec.device_name(),
                    exec.kernel_variant().name(),
                    a.hub_executors
                );
            }
            executors.push(Box::new(exec));
        }
    } else {
        let checkers = selected
            .iter()
            .map(|p| {
                crate::collision::CpuChecker::new(
                    &r.model,
                    &r.group,
                    &r.start_full_state(p),
                    &p.scene,
                    opts,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        for _ in 0..a.hub_executors {
            executors.push(Box::new(crate::collision::hub::CpuBatch::new(
                checkers.clone(),
            )?));
        }
    }
    let space = r.group.space.clone();
    let hub_opts = HubOptions {
        max_wait: Duration::from_micros(a.hub_wait_us),
    };
    Ok(LaunchHub::with_executors(executors, space, hub_opts)?)
}

/// The hub's counts as JSON.
fn hub_summary(st: &HubStats, wait_us: u64, executors: usize) -> Value {
    let per = |x: u64| {
        if st.rounds > 0 {
            x as f64 / st.rounds as f64
        } else {
            0.0
        }
    };
    json!({
        "max_wait_us": wait_us,
        "executors": executors,
        "rounds": st.rounds,
        "requests": st.requests,
        "batches": st.batches,
        "configs": st.configs,
        "motions": st.motions,
        "timed_out_rounds": st.timed_out_rounds,
        "requests_per_round": per(st.requests),
        "device_ms": st.device_ms,
    })
}

/// Runs the benchmark, writes the JSON and markdown files and returns the summary.
pub fn run(a: &BenchMbmArgs) -> Result<Value, CliError> {
    let planner: PlannerId = a.planner.parse().map_err(|e| CliError(format!("{e}")))?;
    if !(a.time_limit.is_finite() && a.time_limit > 0.0 && a.time_limit < 1e6) {
        return Err(CliError(format!(
            "--time-limit must be a positive number of seconds, got {}",
            a.time_limit
        )));
    }
    if a.tuning.batch_size == Some(0) {
        return Err(CliError("--batch-size must be at least 1".into()));
    }
    if let Some(r) = a.tuning.range {
        if !(r.is_finite() && r > 0.0) {
            return Err(CliError(format!(
                "--range must be a positive joint-space distance, got {r}"
            )));
        }
    }
    if let Some(r) = a.tuning.dd_radius {
        if !(r.is_finite() && r > 0.0) {
            return Err(CliError(format!(
                "--dd-radius must be a positive factor of the range, got {r}"
            )));
        }
    }
    if a.tuning.shortcut_refinements > crate::collision::MAX_REFINEMENTS {
        return Err(CliError(format!(
            "--shortcut-refinements must be at most {}, got {}",
            crate::collision::MAX_REFINEMENTS,
            a.tuning.shortcut_refinements
        )));
    }
    if a.concurrent == Some(0) {
        return Err(CliError("--concurrent must be at least 1".into()));
    }
    if a.batched == Some(0) {
        return Err(CliError("--batched must be at least 1".into()));
    }
    if !(1..=8).contains(&a.hub_executors) {
        return Err(CliError(format!(
            "--hub-executors must be 1 to 8, got {}",
            a.hub_executors
        )));
    }
    for s in &a.scenes {
        if !crate::mbm::SCENES.contains(&s.as_str()) {
            return Err(CliError(format!(
                "unknown scene '{s}' (expected one of {})",
                crate::mbm::SCENES.join(", ")
            )));
        }
    }
    for r in &a.robots {
        if !crate::mbm::ROBOTS.contains(&r.as_str()) {
            return Err(CliError(format!(
                "unknown robot '{r}' (expected one of {})",
                crate::mbm::ROBOTS.join(", ")
            )));
        }
    }
    parse_shapes(&a.shapes)?;
    super::sphere_fit(a.sphere_tolerance, a.max_spheres)?;
    let data = crate::mbm::data_dir()?;
    let started = std::time::SystemTime::now();
    let date = utc_date(
        started
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    );
    let mut robots = serde_json::Map::new();
    let mut all_records = serde_json::Map::new();
    let mut all_concurrent = serde_json::Map::new();
    let mut all_batched = serde_json::Map::new();
    let mut batch_sizes = std::collections::BTreeSet::new();
    let mut backend_name = a.backend.clone();
    for name in &a.robots {
        eprintln!("bench mbm: {name} ...");
        let run = run_robot(a, &data, name, planner)?;
        let records = &run.records;
        batch_sizes.extend(records.iter().filter(|r| r.valid).map(|r| r.batch_size));
        let mut scenes = serde_json::Map::new();
        for scene in crate::mbm::SCENES {
            let rs: Vec<&ProblemRecord> = records.iter().filter(|r| r.scene == scene).collect();
            if !rs.is_empty() {
                scenes.insert(scene.to_string(), group_summary(&rs));
            }
        }
        let all: Vec<&ProblemRecord> = records.iter().collect();
        let mut summary = json!({
            "scenes": scenes,
            "all": group_summary(&all),
            "sequential_total_s": run.sequential,
            "sequential_total_with_setup_s": run.with_setup,
            "sequential_wall_s": run.sequential_wall,
        });
        let on_device = match summary["all"]["device_time_s"]["median"].as_f64() {
            Some(_) => format!(
                " (device time median {} ms, iterations median {})",
                ms(&summary["all"]["device_time_s"]["median"]),
                num(&summary["all"]["iterations"]["median"], 1)
            ),
            None => String::new(),
        };
        eprintln!(
            "bench mbm: {name}: solved {}/{} valid of {}, median {} ms{on_device}",
            summary["all"]["solved"],
            summary["all"]["valid"],
            summary["all"]["total"],
            ms(&summary["all"]["planning_time_s"]["median"])
        );
        if let Some(c) = &run.concurrent {
            eprintln!(
                "bench mbm: {name}: {} in flight: {} s wall vs {} s sequential, {} of {} identical",
                c["in_flight"],
                num(&c["wall_s"], 3),
                num(&run.sequential_wall.into(), 3),
                c["identical"],
                c["problems"]
            );
            summary["concurrent"] = c.clone();
        }
        if let Some(b) = run.batched.as_ref().filter(|b| b["mode"] == "device") {
            eprintln!(
                "bench mbm: {name}: one device launch for {} problems: {} s, {} solved, {} re-validated on the CPU",
                b["problems"],
                num(&b["wall_s"], 4),
                b["solved"],
                b["revalidated_on_cpu"]
            );
            summary["batched"] = b.clone();
        } else if let Some(b) = &run.batched {
            eprintln!(
                "bench mbm: {name}: {} in flight sharing launches: {} s wall vs {} s sequential, {} of {} identical, {} requests per round",
                b["in_flight"],
                num(&b["wall_s"], 3),
                num(&run.sequential_wall.into(), 3),
                b["identical"],
                b["problems"],
                num(&b["hub"]["requests_per_round"], 1)
            );
            summary["batched"] = b.clone();
        }
        robots.insert(name.clone(), summary);
        all_records.insert(name.clone(), serde_json::to_value(records)?);
        if let Some(c) = &run.concurrent_records {
            all_concurrent.insert(name.clone(), serde_json::to_value(c)?);
        }
        if let Some(b) = &run.batched_records {
            all_batched.insert(name.clone(), serde_json::to_value(b)?);
        }
    }
    if a.backend == "auto" {
        // What `make_checker` chose: hybrid where a GPU is usable, else the CPU.
        backend_name = if crate::gpu::gpu_available() {
            "hybrid"
        } else {
            "cpu"
        }
        .into();
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let batch_size: Value = match batch_sizes.len() {
        0 => a
            .tuning
            .batch_size
            .map_or(Value::Null, |b| Value::from(b as u64)),
        1 => batch_sizes
            .iter()
            .next()
            .map_or(Value::Null, |&b| Value::from(b as u64)),
        _ => json!(batch_sizes.iter().map(|&b| b as u64).collect::<Vec<_>>()),
    };
    let backend_kind = if backend_name == "cuda" {
        "On the CUDA backend they share the GPU through concurrent streams (each checker has its own stream, so the kernels of different problems can overlap on the device), not through shared kernel launches: each launch still holds the checks of one problem."
    } else {
        "On the CPU backend they share the CPU cores: one thread per problem in flight, each checker with its own worker threads (--threads), so the gain is bounded by the number of cores."
    };
    let mut report = json!({
        "benchmark": "MotionBenchMaker (7 scenes x 100 problems per robot)",
        "planner": planner.as_str(),
        "backend": backend_name,
        "shapes": a.shapes,
        "sphere_fit": (a.shapes == "fitted").then(|| json!({"tolerance": a.sphere_tolerance, "max_per_body": a.max_spheres})),
        "date": date,
        "machine": machine_info(),
        "command": command,
        "time_limit_s": a.time_limit,
        "resolution": a.resolution,
        "seed": a.seed,
        "threads": a.threads,
        "batch_size": batch_size,
        "problems_per_scene": a.problems,
        "indices": a.indices,
        "robots": robots,
        "batched": match a.batched {
            Some(_) if a.tuning.on_device => json!({
                "supported": true,
                "mode": "device",
                "note": "with --on-device: every valid problem of a robot planned by the device RRT-Connect in one launch (each problem in its own scene), each raw path re-validated on the CPU afterwards.",
            }),
            Some(n) => json!({
                "supported": true,
                "in_flight": n,
                "note": format!(
                    "{n} problems in flight, each planned by its own plan() call in its own thread, all sharing one launch hub (collision::hub): every check request waits for the other problems' requests (at most {} us) and the hub runs each round as one batch of configurations and one batch of motions, each item checked in its own problem's scene. {} The wall time includes building the hub (every scene resident at once).",
                    a.hub_wait_us,
                    if backend_name == "cuda" || backend_name == "hybrid" {
                        "On the CUDA backend a round is one launch of each kind (check_configs_multi, check_motions_balanced_multi)."
                    } else {
                        "On the CPU backend the hub's executor checks a round's items one after another on the hub's thread (the reference tests): this exercises the shared-launch path, it is not meant to be fast."
                    }
                ),
            }),
            None => json!({
                "supported": true,
                "note": "no batched pass in this run (`--batched N` plans the problems with N in flight sharing collision-check launches)",
            }),
        },
        "anchor": "Panda 699/699 solved, median 35 us, mean 76 us, p95 343 us, all 700 in 99 ms; UR5 608/608, median 39 us; Fetch 668/679, median 828 us (Ryzen 9 7950X). On this project's machine kind: Panda median 60 us, UR5 52 us, Fetch 776 us.",
    });
    // The planner options (attempts, device escalation, range, ...), as given.
    if let (Some(fields), Value::Object(tuning)) = (report.as_object_mut(), a.tuning.report()) {
        fields.extend(tuning);
    }
    if let Some(n) = a.concurrent {
        report["concurrent"] = json!({
            "in_flight": n,
            "note": format!(
                "Each problem is planned by its own plan() call with its own checker, exactly as in the sequential pass; planners are deterministic for a seed, so a problem's result can differ between the passes only when the time limit cut its planning short in one of them. {backend_kind}"
            ),
        });
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError(format!("cannot create {}: {e}", a.out.display())))?;
    let stem = format!("mbm_{}_{}_{}", planner.as_str(), backend_name, date);
    let json_path = a.out.join(format!("{stem}.json"));
    let md_path = a.out.join(format!("{stem}.md"));
    let md = markdown(&report);
    let mut full = report.clone();
    full["problems"] = Value::Object(all_records);
    if a.concurrent.is_some() {
        full["concurrent_problems"] = Value::Object(all_concurrent);
    }
    if a.batched.is_some() {
        full["batched_problems"] = Value::Object(all_batched);
    }
    write_atomic(&json_path, serde_json::to_string_pretty(&full)?.as_bytes())?;
    write_atomic(&md_path, md.as_bytes())?;
    report["files"] = json!([
        json_path.display().to_string(),
        md_path.display().to_string()
    ]);
    Ok(report)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    crate::report::write_atomically(path, bytes)
        .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_statistics() {
        let s = summary(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s["median"], 2.5);
        assert_eq!(s["mean"], 2.5);
        assert_eq!(s["max"], 4.0);
        assert_eq!(s["p95"], 4.0);
        assert_eq!(summary(&[])["n"], 0);
    }
}
