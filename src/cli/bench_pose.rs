//! `gmp bench pose`: planning to pose goals on the MotionBenchMaker problems, with goal sets
//! of different sizes side by side. Each problem's goal becomes the pose of the planning
//! group's tip link at the problem's goal configuration; inverse kinematics from the start
//! finds configurations reaching it (up to eight, the collision-free ones nearest the start
//! first) and the planner plans to the nearest `n` of them as one goal set
//! ([`crate::planners::pose::plan_to_pose_set`]), for every `n` of `--sets` in turn on the same
//! problem and checker. Reports per robot and set size: solved, time to a trajectory (inverse
//! kinematics, planning, shortcutting, timing), and how often the plan ended at a goal other
//! than the nearest. With `--candidates`, each problem is also planned to whichever of `c`
//! poses it reaches (grasp candidates: the goal pose turned about the tip link's z axis by
//! multiples of 360/c degrees, as a symmetric gripper may grasp;
//! [`crate::planners::pose::plan_to_poses_set`]), for every `c` and set size side by side.
//! Writes `<out>/pose_<date>.json` and `.md`.
//!
//! A benchmark, not a test: it measures and reports, it asserts nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use super::bench_mbm::summary;
use super::{mbm_backend_checker, mbm_problem_checker, shapes_for, CliError};
use crate::collision::Checker;
use crate::planners::device::settings_for_request;
use crate::planners::pose::{plan_to_poses_set, MAX_GOAL_POSES};
use crate::planners::{plan, PlanError, PlanRequest, PlannerId};
use crate::robot::ik::{default_tip_link, IkOptions, IkSolver, PoseTarget};
use crate::robot::spherize::SphereFit;

/// `gmp bench pose` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchPoseArgs {
    /// Robots (panda, ur5, fetch).
    #[arg(long, value_delimiter = ',', default_value = "panda,ur5,fetch")]
    pub robots: Vec<String>,
    /// Problems per scene at most (the first ones).
    #[arg(long, default_value_t = 100)]
    pub problems: usize,
    /// Goal set sizes compared, each planned on every problem.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    pub sets: Vec<usize>,
    /// Numbers of goal poses compared (grasp candidates: the goal pose turned about the tip
    /// link's z axis by multiples of 360/c degrees), each with every goal set size.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub candidates: Vec<usize>,
    /// Planner.
    #[arg(long, default_value = "rrt_connect")]
    pub planner: String,
    /// Time limit per problem (s), inverse kinematics included.
    #[arg(long = "time-limit", default_value_t = 1.0)]
    pub time_limit: f64,
    /// Seed of the planner and of the inverse kinematics' random starts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Robot geometry: `spheres` (the benchmark's sphere models) or `polytopes`.
    #[arg(long, default_value = "spheres")]
    pub shapes: String,
    /// Collision backend of the planning (`cpu`: one checker thread; `cuda`, `hybrid`,
    /// `auto`). Start and goal validity is always the one-thread CPU checker's.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Plan with the device RRT-Connect (a GPU backend; the goal set raced in one launch).
    #[arg(long = "on-device")]
    pub on_device: bool,
    /// Attempts per problem (parallel attempts; on the device, shared out over the goals).
    #[arg(long, default_value_t = 1)]
    pub attempts: usize,
    /// Results folder (nothing written without it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One set size's tally over the problems of one robot.
#[derive(Default)]
struct Tally {
    solved: usize,
    failed: BTreeMap<String, usize>,
    times: Vec<f64>,
    not_nearest: usize,
    other_pose: usize,
    lengths: Vec<f64>,
}

/// The kind of a planning error, for the tally.
fn error_kind(e: &PlanError) -> String {
    match e {
        PlanError::NoIkSolution(_) => "no pose solution".into(),
        PlanError::InvalidGoal(_) => "every pose solution in collision".into(),
        PlanError::NoPath { .. } => "no path in time".into(),
        other => other.to_string(),
    }
}

/// Runs `gmp bench pose`.
pub fn run(a: &BenchPoseArgs) -> Result<Value, CliError> {
    if a.sets.is_empty() || a.sets.contains(&0) {
        return Err(CliError(
            "--sets: give goal set sizes of at least 1, e.g. 1,8".into(),
        ));
    }
    if a.candidates.is_empty()
        || a.candidates
            .iter()
            .any(|&c| !(1..=MAX_GOAL_POSES).contains(&c))
    {
        return Err(CliError(format!(
            "--candidates: give numbers of goal poses from 1 to {MAX_GOAL_POSES}, e.g. 1,4"
        )));
    }
    // Every (candidates, set size) pair, candidates first.
    let combos: Vec<(usize, usize)> = a
        .candidates
        .iter()
        .flat_map(|&c| a.sets.iter().map(move |&n| (c, n)))
        .collect();
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        return Err(CliError(format!(
            "--time-limit must be positive, got {}",
            a.time_limit
        )));
    }
    let planner: PlannerId = a
        .planner
        .parse()
        .map_err(|e| CliError(format!("--planner: {e}")))?;
    let data = crate::mbm::data_dir()?;
    let mut rows = Vec::new();
    let mut md = format!(
        "Pose goals (the tip link's pose at each MBM goal), {planner}{}, {} s per problem, seed {}, {} shapes, backend {}, {} attempt(s).\n\n\
         | robot | poses | goal set | solved | no free pose solution | time median / mean / p95 (ms) | path length mean | ended at another goal | at another pose |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        if a.on_device { " on the device" } else { "" },
        a.time_limit,
        a.seed,
        a.shapes,
        a.backend,
        a.attempts.max(1)
    );
    for robot in &a.robots {
        let mut r = crate::mbm::load_robot(&data, robot)?;
        let shapes = shapes_for(&mut r.model, &a.shapes, &SphereFit::default())?;
        let tip = default_tip_link(&r.model, &r.group)
            .ok_or_else(|| CliError(format!("{robot}: group '{}' has no tip", r.group.name)))?;
        let mut per_scene: BTreeMap<String, usize> = BTreeMap::new();
        let problems = crate::mbm::load_problems_where(&data, robot, |scene, _| {
            let n = per_scene.entry(scene.to_string()).or_default();
            *n += 1;
            *n <= a.problems
        })?;
        let mut tallies: Vec<Tally> = combos.iter().map(|_| Tally::default()).collect();
        let mut valid = 0usize;
        for p in &problems {
            let base = r.start_full_state(p);
            let (start, goal) = r.start_goal(p)?;
            let (cpu, [start_free, goal_free]) = mbm_problem_checker(&r, p, shapes)?;
            if !(start_free && goal_free) {
                continue; // an invalid MBM problem (see gmp mbm-validity)
            }
            let other: Box<dyn Checker>;
            let checker: &dyn Checker = if a.backend == "cpu" {
                cpu.as_ref()
            } else {
                other = mbm_backend_checker(&a.backend, &r, p, shapes, 0)?;
                if a.on_device {
                    // The device planner's buffers before the timing, as a long-lived checker
                    // (the node's) has them: a run from the start to itself.
                    if let Some(d) = other.device_planner() {
                        let mut warm = PlanRequest::new(start.clone(), start.clone(), planner);
                        warm.attempts = a.attempts;
                        let s = settings_for_request(&warm, other.space(), Duration::from_secs(1));
                        let _ = d.rrt_connect(&[(&start, &start)], &s);
                    }
                }
                other.as_ref()
            };
            valid += 1;
            let pose = r
                .model
                .tree
                .forward_kinematics(&r.group.full_state(&base, &goal))[tip];
            let mut solvers: Vec<Vec<IkSolver>> = Vec::new();
            for &c in &a.candidates {
                let turn = |k: usize| {
                    let angle = std::f64::consts::TAU * k as f64 / c as f64;
                    pose * nalgebra::UnitQuaternion::from_axis_angle(
                        &nalgebra::Vector3::z_axis(),
                        angle,
                    )
                };
                let set = (0..c)
                    .map(|k| {
                        IkSolver::new(&r.model, &r.group, &base, PoseTarget::pose(tip, turn(k)))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| CliError(format!("{robot}: {e}")))?;
                solvers.push(set);
            }
            let opts = IkOptions {
                seed: a.seed.wrapping_add(p.index as u64),
                ..IkOptions::default()
            };
            let mut req = PlanRequest::new(start.clone(), goal.clone(), planner);
            req.seed = a.seed;
            req.time_limit = Duration::from_secs_f64(a.time_limit);
            req.group = r.group.name.clone();
            req.on_device = a.on_device;
            req.attempts = a.attempts.max(1);
            for (&(c, n), tally) in combos.iter().zip(&mut tallies) {
                // The solvers of the first entry of `c` (a repeated one plans the same).
                let at = a.candidates.iter().position(|&x| x == c).unwrap_or(0);
                let t = Instant::now();
                let out = plan_to_poses_set(checker, &req, &solvers[at], &opts, n, |one| {
                    plan(checker, one)
                });
                let wall = t.elapsed().as_secs_f64();
                match out {
                    Ok(pp) => {
                        tally.solved += 1;
                        tally.times.push(wall);
                        tally.lengths.push(pp.result.stats.path_length_after);
                        if pp.result.reached_goal > 0 {
                            tally.not_nearest += 1;
                        }
                        if pp.pose > 0 {
                            tally.other_pose += 1;
                        }
                    }
                    Err(e) => {
                        *tally.failed.entry(error_kind(&e)).or_default() += 1;
                    }
                }
            }
        }
        for (&(c, n), tally) in combos.iter().zip(&tallies) {
            let count = |kind: &str| tally.failed.get(kind).copied().unwrap_or(0);
            let no_free = count("no pose solution") + count("every pose solution in collision");
            let times = summary(&tally.times);
            let lengths = summary(&tally.lengths);
            let ms = |k: &str| {
                times[k]
                    .as_f64()
                    .map_or("-".into(), |v| format!("{:.2}", v * 1e3))
            };
            md.push_str(&format!(
                "| {robot} | {c} | {n} | {} / {valid} | {no_free} | {} / {} / {} | {} | {} | {} |\n",
                tally.solved,
                ms("median"),
                ms("mean"),
                ms("p95"),
                lengths["mean"]
                    .as_f64()
                    .map_or("-".into(), |v| format!("{v:.3}")),
                tally.not_nearest,
                tally.other_pose,
            ));
            rows.push(json!({
                "robot": robot,
                "group": r.group.name,
                "link": r.model.tree.links[tip].name,
                "goal_poses": c,
                "goal_set": n,
                "valid_problems": valid,
                "solved": tally.solved,
                "failures": tally.failed,
                "time_s": times,
                "path_length_after": lengths,
                "ended_at_another_goal": tally.not_nearest,
                "ended_at_another_pose": tally.other_pose,
            }));
        }
    }
    md.push_str(
        "\nTime: wall time of the whole pose plan (inverse kinematics, planning, shortcutting, \
         timing and re-validation), solved problems only. \"ended at another goal\": solved \
         plans that ended at a goal other than the first of the set (the nearest collision-free \
         one). \"poses\": the goal pose and copies turned about the tip link's z axis by \
         multiples of 360/poses degrees (grasp candidates); \"at another pose\": plans that \
         ended at one of those copies.\n",
    );
    let date = crate::report::today();
    let v = json!({
        "benchmark": "pose",
        "date": date,
        "machine": crate::report::machine_info(),
        "planner": planner.as_str(),
        "time_limit_s": a.time_limit,
        "seed": a.seed,
        "shapes": a.shapes,
        "backend": a.backend,
        "on_device": a.on_device,
        "attempts": a.attempts.max(1),
        "problems_per_scene": a.problems,
        "results": rows,
    });
    if let Some(dir) = &a.out {
        super::write_bench_results(dir, &format!("pose_{date}"), &v, &md)?;
    }
    Ok(v)
}
