//! RRT-Connect resident on the GPU (`PlanRequest::on_device`, `planners::device`,
//! `kernels/rrtc.cu`).
//!
//! On a machine with a GPU (run there by `scripts/device_gpu.sh planner`), on MotionBenchMaker
//! Panda and UR5 problems of every scene, sphere and polytope models:
//! - every plan succeeds, starts and ends where asked, respects the limits;
//! - every motion of the raw path the device planned is valid for a fresh CPU checker at the
//!   planning resolution (the device's motion verdicts are the CPU's), and the returned
//!   trajectory passes `trajectory::validate_along` with a fresh CPU checker;
//! - planning twice with the same seed gives the same raw path; several problems in one launch
//!   give each the path it gets alone;
//! - an iteration limit too small to solve a problem ends in a clear "no path";
//! - a goal set races attempts towards every goal: a set of one goal twice plans as the goal
//!   alone, a goal in straight sight wins over one that needs a tree, two goals that need trees
//!   give a path ending at the winning attempt's goal, the same alone or beside another problem.
//!
//! Without a GPU those tests skip with a message. One test runs everywhere: asking for the
//! device planner with the CPU checker is a clear error.

mod common;

use std::time::Duration;

use gpu_motion_planner::collision::{
    Checker, CheckerOptions, CpuChecker, MotionBatch, RobotShapes,
};
use gpu_motion_planner::gpu::{self, CudaChecker};
use gpu_motion_planner::mbm::{self, MbmRobot, Problem};
use gpu_motion_planner::planners::device::{
    DevicePlanner, DeviceProblem, DeviceRrtcSettings, DeviceStatus,
};
use gpu_motion_planner::planners::{plan, PlanError, PlanRequest, PlannerId};
use gpu_motion_planner::trajectory;

const RESOLUTION: f64 = 0.02;

fn gpu_or_skip(test: &str) -> bool {
    if gpu::gpu_available() {
        true
    } else {
        eprintln!("SKIP {test}: no CUDA device; the device planner tests run on the GPU machine via scripts/device_gpu.sh planner");
        false
    }
}

fn request(r: &MbmRobot, p: &Problem, seed: u64) -> PlanRequest {
    let (start, goal) = r.start_goal(p).expect("start and goal");
    let mut req = PlanRequest::new(start, goal, PlannerId::RrtConnect);
    req.seed = seed;
    req.resolution = RESOLUTION;
    req.time_limit = Duration::from_secs(30);
    req.on_device = true;
    req
}

fn opts(shapes: RobotShapes) -> CheckerOptions {
    CheckerOptions {
        shapes,
        ..Default::default()
    }
}

/// A CUDA checker of problem `p`'s scene and base state.
fn cuda_for(r: &MbmRobot, p: &Problem, shapes: RobotShapes) -> CudaChecker {
    let base = r.start_full_state(p);
    CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts(shapes)).expect("cuda checker")
}

/// A fresh CPU checker of problem `p`'s scene and its verdicts on the motions of `path` at the
/// planning resolution.
fn cpu_verdicts(
    r: &MbmRobot,
    p: &Problem,
    shapes: RobotShapes,
    path: &[Vec<f64>],
) -> (CpuChecker, Vec<bool>) {
    let base = r.start_full_state(p);
    let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts(shapes)).expect("cpu");
    let mut motions = MotionBatch::new(r.group.space.dof());
    for w in path.windows(2) {
        motions.push(&w[0], &w[1]).expect("motion");
    }
    let verdicts = cpu.check_motions(&motions, RESOLUTION).expect("check");
    (cpu, verdicts)
}

/// Problems `indices` of every scene of `robot`.
fn problems(data: &std::path::Path, robot: &str, indices: &[usize]) -> (MbmRobot, Vec<Problem>) {
    let r = mbm::load_robot(data, robot).expect("robot loads");
    let all = mbm::load_problems(data, robot).expect("problems load");
    let picked = all
        .into_iter()
        .filter(|p| indices.contains(&p.index))
        .collect();
    (r, picked)
}

/// Plans every problem twice on the device and checks both results with fresh CPU checkers.
fn solves_and_validates(robot: &str, shapes: RobotShapes, indices: &[usize]) {
    let data = common::mbm_or_skip("device planner").expect("MBM data");
    let (r, picked) = problems(&data, robot, indices);
    assert!(picked.len() >= 7, "{robot}: {} problems", picked.len());
    let space = &r.group.space;
    let mut tree_plans = 0;
    for p in &picked {
        let what = format!("{robot} {shapes:?} {}#{}", p.scene_name, p.index);
        let base = r.start_full_state(p);
        let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts(shapes)).expect("cpu");
        let (start, goal) = r.start_goal(p).expect("start and goal");
        if !cpu.check_config(&start).expect("check") || !cpu.check_config(&goal).expect("check") {
            continue; // an invalid problem (start or goal in collision)
        }
        let cuda = cuda_for(&r, p, shapes);
        let req = request(&r, p, 7);
        let a = plan(&cuda, &req).unwrap_or_else(|e| panic!("{what}: {e}"));
        let b = plan(&cuda, &req).unwrap_or_else(|e| panic!("{what} (again): {e}"));
        assert_eq!(a.raw_path, b.raw_path, "{what}: same seed, same raw path");
        assert_eq!(
            a.raw_path.first(),
            Some(&start),
            "{what}: starts at the start"
        );
        assert_eq!(a.raw_path.last(), Some(&goal), "{what}: ends at the goal");
        if a.raw_path.len() > 2 {
            tree_plans += 1;
            assert!(a.stats.motions_checked > 1, "{what}: device work counted");
        }
        let on_device = a
            .stats
            .device_time
            .unwrap_or_else(|| panic!("{what}: no device time reported"));
        assert!(
            on_device > std::time::Duration::ZERO && on_device <= a.stats.planning_time,
            "{what}: device time {on_device:?} outside the planning time {:?}",
            a.stats.planning_time
        );
        for q in &a.raw_path[1..] {
            assert!(space.within_limits(q), "{what}: vertex outside the limits");
        }
        let (fresh, verdicts) = cpu_verdicts(&r, p, shapes, &a.raw_path);
        assert!(
            verdicts.iter().all(|&v| v),
            "{what}: the CPU rejects a motion the device accepted: {verdicts:?}"
        );
        trajectory::validate_along(&fresh, &a.path, &a.trajectory, RESOLUTION)
            .unwrap_or_else(|e| panic!("{what}: re-check: {e}"));
    }
    assert!(
        tree_plans > 0,
        "{robot}: every problem was solved by the straight motion; the trees were not exercised"
    );
}

#[test]
fn device_rrt_connect_panda_spheres() {
    if gpu_or_skip("device_rrt_connect_panda_spheres") {
        solves_and_validates("panda", RobotShapes::Spheres, &[1, 2, 3]);
    }
}

#[test]
fn device_rrt_connect_panda_polytopes() {
    if gpu_or_skip("device_rrt_connect_panda_polytopes") {
        solves_and_validates("panda", RobotShapes::Polytopes, &[1, 2]);
    }
}

#[test]
fn device_rrt_connect_ur5_spheres() {
    if gpu_or_skip("device_rrt_connect_ur5_spheres") {
        solves_and_validates("ur5", RobotShapes::Spheres, &[1, 2]);
    }
}

/// Settings as `plan` would give a request with default options on the Panda.
fn settings(space: &gpu_motion_planner::robot::JointSpace, seed: u64) -> DeviceRrtcSettings {
    DeviceRrtcSettings {
        range: gpu_motion_planner::planners::default_range(PlannerId::RrtConnect, space),
        resolution: RESOLUTION,
        dynamic_domain: true,
        dd_radius: gpu_motion_planner::planners::default_dd_radius(space.dof()),
        balance_trees: true,
        seed,
        max_iterations: u32::MAX,
        time_limit: Duration::from_secs(30),
        warps: 8,
        tree_capacity: 4096,
        max_refinements: 6,
        attempts: 1,
        extra_attempts: 0,
        escalate_after: 0,
    }
}

#[test]
fn device_rrt_connect_batch_equals_one_at_a_time() {
    if !gpu_or_skip("device_rrt_connect_batch_equals_one_at_a_time") {
        return;
    }
    let data = common::mbm_or_skip("device planner").expect("MBM data");
    let (r, picked) = problems(&data, "panda", &[1]);
    let p = picked
        .iter()
        .find(|p| p.scene_name == "bookshelf_small")
        .expect("a bookshelf_small problem");
    let base = r.start_full_state(p);
    let cuda = cuda_for(&r, p, RobotShapes::Spheres);
    // Several start/goal pairs in the one scene: the problem's own and ones built from the
    // other problems' ends that are valid here.
    let cpu = CpuChecker::new(
        &r.model,
        &r.group,
        &base,
        &p.scene,
        opts(RobotShapes::Spheres),
    )
    .expect("cpu");
    let mut ends = Vec::new();
    for q in picked.iter().flat_map(|q| {
        let (s, g) = r.start_goal(q).expect("ends");
        [s, g]
    }) {
        if cpu.check_config(&q).expect("check") {
            ends.push(q);
        }
    }
    assert!(ends.len() >= 4, "only {} valid configurations", ends.len());
    let pairs: Vec<(&[f64], &[f64])> = ends
        .windows(2)
        .take(6)
        .map(|w| (w[0].as_slice(), w[1].as_slice()))
        .collect();
    let s = settings(&r.group.space, 3);
    let together = cuda.rrt_connect(&pairs, &s).expect("batch");
    assert_eq!(together.len(), pairs.len());
    for (i, pair) in pairs.iter().enumerate() {
        let alone = cuda.rrt_connect(&[*pair], &s).expect("alone");
        assert_eq!(alone[0].status, together[i].status, "problem {i}");
        assert_eq!(alone[0].path, together[i].path, "problem {i}: same path");
        assert_eq!(alone[0].iterations, together[i].iterations, "problem {i}");
    }
    assert!(
        together.iter().any(|o| o.status == DeviceStatus::Solved),
        "no problem solved: {together:?}"
    );
}

/// `plan_many` with the device RRT-Connect: every admitted problem in one launch, each result
/// the one `plan` gives it alone (raw path, shortcut path), errors in their own slots, and
/// every returned path valid on a fresh CPU checker.
#[test]
fn device_plan_many_equals_one_plan_at_a_time() {
    if !gpu_or_skip("device_plan_many_equals_one_plan_at_a_time") {
        return;
    }
    let data = common::mbm_or_skip("device planner").expect("MBM data");
    let (r, picked) = problems(&data, "panda", &[1, 2, 3, 4]);
    let p = picked
        .iter()
        .find(|p| p.scene_name == "table_pick")
        .expect("a table_pick problem");
    let cuda = cuda_for(&r, p, RobotShapes::Spheres);
    // The table_pick problems' ends, in this one scene (some may be in collision here: they
    // must get their own error), and a start that is its goal.
    let mut ends: Vec<(Vec<f64>, Vec<f64>)> = picked
        .iter()
        .filter(|q| q.scene_name == "table_pick")
        .map(|q| r.start_goal(q).expect("ends"))
        .collect();
    let (s0, _) = r.start_goal(p).expect("ends");
    ends.push((s0.clone(), s0));
    let mut template = request(&r, p, 5);
    template.attempts = 4;
    let results = gpu_motion_planner::planners::plan_many(&cuda, &template, &ends);
    assert_eq!(results.len(), ends.len());
    let mut solved = 0;
    for (i, ((start, goal), got)) in ends.iter().zip(&results).enumerate() {
        let alone = plan(
            &cuda,
            &PlanRequest {
                start: start.clone(),
                goal: goal.clone(),
                ..template.clone()
            },
        );
        match (got, &alone) {
            (Ok(got), Ok(alone)) => {
                solved += 1;
                assert_eq!(got.raw_path, alone.raw_path, "problem {i}: raw path");
                assert_eq!(got.path, alone.path, "problem {i}: path");
                assert_eq!(got.stats.iterations, alone.stats.iterations, "problem {i}");
                let (_, verdicts) = cpu_verdicts(&r, p, RobotShapes::Spheres, &got.path);
                let bad = verdicts.iter().filter(|&&v| !v).count();
                assert_eq!(bad, 0, "problem {i}: invalid motions on the CPU");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "problem {i}"),
            (a, b) => panic!(
                "problem {i}: batch {:?} against alone {:?}",
                a.as_ref().err(),
                b.as_ref().err()
            ),
        }
    }
    assert!(solved >= 2, "only {solved} of {} solved", ends.len());
}

/// Runs `f` on each Panda problem of indices 1 to 3 of every scene whose start and goal are
/// valid (sphere model): robot, problem, its CUDA checker, start, goal and a name.
fn for_valid_panda_problems(
    mut f: impl FnMut(&MbmRobot, &Problem, &CudaChecker, &[f64], &[f64], &str),
) {
    let data = common::mbm_or_skip("device planner").expect("MBM data");
    let (r, picked) = problems(&data, "panda", &[1, 2, 3]);
    for p in &picked {
        let what = format!("panda {}#{}", p.scene_name, p.index);
        let cuda = cuda_for(&r, p, RobotShapes::Spheres);
        let (start, goal) = r.start_goal(p).expect("ends");
        if cuda.check_config(&start).expect("check") && cuda.check_config(&goal).expect("check") {
            f(&r, p, &cuda, &start, &goal, &what);
        }
    }
}

/// Parallel attempts (one block each): the same winner on every run and whether the problem
/// is planned alone or beside others, never more iterations than attempt 0 alone needs, and a
/// path the CPU accepts.
#[test]
fn device_attempts_race_is_deterministic_and_no_worse() {
    if !gpu_or_skip("device_attempts_race_is_deterministic_and_no_worse") {
        return;
    }
    let mut raced = 0;
    for_valid_panda_problems(|r, p, cuda, start, goal, what| {
        let space = &r.group.space;
        let one = settings(space, 11);
        let mut four = one.clone();
        four.attempts = 4;
        let alone = &cuda.rrt_connect(&[(start, goal)], &one).expect("runs")[0];
        let a = &cuda.rrt_connect(&[(start, goal)], &four).expect("runs")[0];
        let b = &cuda.rrt_connect(&[(start, goal)], &four).expect("runs")[0];
        let pair = [(start, goal), (goal, start)];
        let c = &cuda.rrt_connect(&pair, &four).expect("runs")[0];
        assert_eq!(a.status, DeviceStatus::Solved, "{what}");
        for other in [b, c] {
            assert_eq!(a.path, other.path, "{what}: the same winner's path");
            assert_eq!(
                (a.attempt, a.iterations),
                (other.attempt, other.iterations),
                "{what}"
            );
        }
        if alone.status == DeviceStatus::Solved {
            assert!(
                a.iterations <= alone.iterations,
                "{what}: {} > {}",
                a.iterations,
                alone.iterations
            );
            if a.attempt == 0 {
                assert_eq!(
                    a.path, alone.path,
                    "{what}: attempt 0 plans as it does alone"
                );
            }
        }
        if a.attempt > 0 {
            raced += 1;
        }
        let (_, verdicts) = cpu_verdicts(r, p, RobotShapes::Spheres, &a.path);
        assert!(verdicts.iter().all(|&v| v), "{what}: {verdicts:?}");
    });
    assert!(
        raced > 0,
        "attempt 0 won every problem: the race was not exercised"
    );
}

/// Escalation (extra attempts for a problem no main attempt solves within a few iterations):
/// the winner follows the rule (the main attempts' race if one solved within the bound; else
/// the main attempts' winner unless an extra attempt solved in fewer iterations counted from
/// the bound), the same on every run, alone or beside another problem; and a path the CPU
/// accepts.
#[test]
fn device_escalation_follows_its_rule() {
    if !gpu_or_skip("device_escalation_follows_its_rule") {
        return;
    }
    let (mut escalated, mut kept) = (0, 0);
    for_valid_panda_problems(|r, p, cuda, start, goal, what| {
        let space = &r.group.space;
        let mut two = settings(space, 5);
        two.attempts = 2;
        let mut esc = two.clone();
        esc.extra_attempts = 6;
        esc.escalate_after = 4;
        let one = [(start, goal)];
        let plain2 = &cuda.rrt_connect(&one, &two).expect("runs")[0];
        let a = &cuda.rrt_connect(&one, &esc).expect("runs")[0];
        let b = &cuda.rrt_connect(&one, &esc).expect("runs")[0];
        let pair = [one[0], (goal, start)];
        let c = &cuda.rrt_connect(&pair, &esc).expect("runs")[0];
        assert_eq!(a.status, DeviceStatus::Solved, "{what}");
        assert_eq!(plain2.status, DeviceStatus::Solved, "{what}");
        if a.attempt < 2 {
            // The main attempts' winner: what they find without extra attempts.
            assert_eq!(
                (a.attempt, a.iterations, &a.path),
                (plain2.attempt, plain2.iterations, &plain2.path),
                "{what}"
            );
            kept += 1;
        } else {
            // An extra attempt wins only past the bound, with fewer iterations counted from it.
            assert!(plain2.iterations > 4, "{what}: {plain2:?}");
            assert!(a.attempt < 8, "{what}: attempt {}", a.attempt);
            assert!(
                a.iterations + 4 < plain2.iterations,
                "{what}: extra attempt {} at {} + 4 iterations against {}",
                a.attempt,
                a.iterations,
                plain2.iterations
            );
            escalated += 1;
        }
        for (got, run) in [(b, "second run"), (c, "beside another")] {
            assert_eq!(
                (got.attempt, got.iterations, &got.path),
                (a.attempt, a.iterations, &a.path),
                "{what}, {run}"
            );
        }
        let (_, verdicts) = cpu_verdicts(r, p, RobotShapes::Spheres, &a.path);
        assert!(verdicts.iter().all(|&v| v), "{what}: {verdicts:?}");
    });
    eprintln!("escalation: an extra attempt won {escalated} problems, a main one {kept}");
    assert!(
        escalated > 0,
        "no extra attempt won: the rule was not exercised"
    );
}

/// `q` moved by `by` on every joint, if that stays inside the limits, is free and in straight
/// sight of `q` for the CPU checker of `p`'s scene.
fn nearby(r: &MbmRobot, p: &Problem, q: &[f64], by: f64) -> Option<Vec<f64>> {
    let near: Vec<f64> = q.iter().map(|v| v + by).collect();
    if !r.group.space.within_limits(&near) {
        return None;
    }
    let (_, verdicts) = cpu_verdicts(r, p, RobotShapes::Spheres, &[q.to_vec(), near.clone()]);
    verdicts[0].then_some(near)
}

/// Goal sets on the device: attempt `a` heads for goal `a % goals`, and the race of the
/// attempts picks the goal reached.
#[test]
fn device_goal_sets_race_every_goal() {
    if !gpu_or_skip("device_goal_sets_race_every_goal") {
        return;
    }
    let (mut straight_won, mut raced) = (0, 0);
    for_valid_panda_problems(|r, p, cuda, start, goal, what| {
        let space = &r.group.space;
        let mut four = settings(space, 11);
        four.attempts = 4;
        let alone = &cuda.rrt_connect(&[(start, goal)], &four).expect("runs")[0];
        // The goal twice: every attempt has the seed and the goal it has alone.
        let twice = DeviceProblem {
            start,
            goals: vec![goal, goal],
        };
        let t = &cuda
            .rrt_connect_sets(std::slice::from_ref(&twice), &four)
            .expect("runs")[0];
        assert_eq!(
            (t.status, &t.path, t.attempt, t.iterations),
            (alone.status, &alone.path, alone.attempt, alone.iterations),
            "{what}: the goal twice"
        );
        // A goal in straight sight of the start beside the problem's goal: when the straight
        // motion to the goal is blocked, attempt 1 wins at iteration 0 with the straight path.
        if let Some(near) = nearby(r, p, start, 0.05) {
            let set = DeviceProblem {
                start,
                goals: vec![goal, &near],
            };
            let o = &cuda
                .rrt_connect_sets(std::slice::from_ref(&set), &four)
                .expect("runs")[0];
            assert_eq!(o.status, DeviceStatus::Solved, "{what}");
            if alone.iterations > 0 {
                assert_eq!((o.attempt, o.iterations), (1, 0), "{what}");
                assert_eq!(o.path, vec![start.to_vec(), near.clone()], "{what}");
                straight_won += 1;
            }
            // Planned as a request: the other goal reached, the trajectory re-validated.
            let mut req = request(r, p, 11);
            req.other_goals = vec![near.clone()];
            let res = plan(cuda, &req).unwrap_or_else(|e| panic!("{what}: {e}"));
            let want = if res.reached_goal == 0 {
                goal
            } else {
                &near[..]
            };
            assert_eq!(res.path.last().map(Vec::as_slice), Some(want), "{what}");
            if alone.iterations > 0 {
                assert_eq!(res.reached_goal, 1, "{what}");
            }
        }
        // Two goals that need trees: the path ends at the winner's goal, the CPU accepts it,
        // and the same comes out alone, again, and beside another problem.
        let Some(other) = nearby(r, p, goal, 0.03) else {
            return;
        };
        let set = DeviceProblem {
            start,
            goals: vec![goal, &other],
        };
        let a = &cuda
            .rrt_connect_sets(std::slice::from_ref(&set), &four)
            .expect("runs")[0];
        let b = &cuda
            .rrt_connect_sets(std::slice::from_ref(&set), &four)
            .expect("runs")[0];
        let beside = [set.clone(), DeviceProblem::new(goal, start)];
        let c = &cuda.rrt_connect_sets(&beside, &four).expect("runs")[0];
        assert_eq!(a.status, DeviceStatus::Solved, "{what}");
        for o in [b, c] {
            assert_eq!(
                (&a.path, a.attempt, a.iterations),
                (&o.path, o.attempt, o.iterations),
                "{what}"
            );
        }
        let reached = set.goals[a.attempt as usize % 2];
        assert_eq!(a.path.last().map(Vec::as_slice), Some(reached), "{what}");
        assert_eq!(a.path.first().map(Vec::as_slice), Some(start), "{what}");
        let (_, verdicts) = cpu_verdicts(r, p, RobotShapes::Spheres, &a.path);
        assert!(verdicts.iter().all(|&v| v), "{what}: {verdicts:?}");
        if a.iterations > 0 {
            raced += 1;
        }
    });
    assert!(
        straight_won > 0,
        "no problem needed a tree: the straight race was not exercised"
    );
    assert!(raced > 0, "every set was solved by a straight motion");
}

#[test]
fn device_rrt_connect_iteration_limit_is_a_clear_no_path() {
    if !gpu_or_skip("device_rrt_connect_iteration_limit_is_a_clear_no_path") {
        return;
    }
    let data = common::mbm_or_skip("device planner").expect("MBM data");
    let (r, picked) = problems(&data, "panda", &[1, 2, 3, 4, 5]);
    // A problem the straight motion does not solve.
    let mut seen = false;
    for p in &picked {
        let cuda = cuda_for(&r, p, RobotShapes::Spheres);
        let (start, goal) = r.start_goal(p).expect("ends");
        let mut direct = MotionBatch::new(start.len());
        direct.push(&start, &goal).expect("motion");
        if !cuda.check_config(&start).expect("check")
            || !cuda.check_config(&goal).expect("check")
            || cuda.check_motions(&direct, RESOLUTION).expect("check")[0]
        {
            continue;
        }
        let mut req = request(&r, p, 1);
        req.max_iterations = Some(1);
        match plan(&cuda, &req) {
            Err(PlanError::NoPath { iterations, .. }) => assert!(iterations <= 1),
            Ok(res) => assert!(res.stats.iterations <= 1, "solved in one iteration"),
            Err(e) => panic!("unexpected error: {e}"),
        }
        let mut s = settings(&r.group.space, 1);
        s.max_iterations = 0;
        let o = cuda.rrt_connect(&[(&start, &goal)], &s).expect("runs");
        assert_eq!(o[0].status, DeviceStatus::Limit);
        assert!(o[0].path.is_empty());
        seen = true;
        break;
    }
    assert!(seen, "no problem needs a tree");
}

#[test]
fn on_device_without_a_gpu_checker_is_a_clear_error() {
    let (world, start, goal) = common::wall_2d();
    let mut req = PlanRequest::new(start, goal, PlannerId::RrtConnect);
    req.on_device = true;
    match plan(&world, &req) {
        Err(PlanError::InvalidRequest(m)) => {
            assert!(m.contains("on_device") && m.contains("GPU"), "{m}")
        }
        other => panic!("expected a clear error, got {other:?}"),
    }
    req.planner = PlannerId::Prm;
    match plan(&world, &req) {
        Err(PlanError::InvalidRequest(m)) => {
            assert!(m.contains("only rrt_connect") && m.contains("prm"), "{m}")
        }
        other => panic!("expected a clear error, got {other:?}"),
    }
    // A goal set too (it is no longer taken goal by goal).
    req.planner = PlannerId::RrtConnect;
    req.other_goals = vec![vec![0.3, 0.5]];
    match plan(&world, &req) {
        Err(PlanError::InvalidRequest(m)) => assert!(m.contains("on_device"), "{m}"),
        other => panic!("expected a clear error, got {other:?}"),
    }
    req.other_goals.clear();
    req.planner = PlannerId::Prm;
    // Without on_device the same request plans on the host.
    req.on_device = false;
    assert!(plan(&world, &req).is_ok());
}
