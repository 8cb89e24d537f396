//! Pose goals: inverse kinematics on the MBM Panda and planning to a pose on the bundled
//! robot and on MBM problems (their joint goals turned into the pose of the hand).

mod common;

use std::time::{Duration, Instant};

use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use gpu_motion_planner::mbm;
use gpu_motion_planner::planners::pose::{
    free_goals, plan_to_pose, plan_to_poses_set, plan_to_poses_with,
};
use gpu_motion_planner::planners::{plan, PlanError, PlanRequest, PlannerId};
use gpu_motion_planner::robot::ik::{
    default_tip_link, IkOptions, IkSolver, PoseTarget, DEFAULT_ORIENTATION_TOLERANCE,
    DEFAULT_POSITION_TOLERANCE, START_BATCH,
};
use gpu_motion_planner::robot::{PlanningGroup, RobotModel};
use gpu_motion_planner::trajectory::Trajectory;
use nalgebra::{Isometry3, Vector3};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use common::bundled::{bundled, Bundled};

impl Bundled {
    /// A CPU checker of the scene and the neutral configuration.
    fn checker_and_start(&self) -> (CpuChecker, Vec<f64>) {
        (self.checker(), self.neutral())
    }
}

fn link_pose(
    robot: &RobotModel,
    group: &PlanningGroup,
    base: &[f64],
    q: &[f64],
    link: usize,
) -> Isometry3<f64> {
    robot.tree.forward_kinematics(&group.full_state(base, q))[link]
}

/// Every consecutive pair of trajectory points passes a fresh CPU checker at a quarter of the
/// planner's resolution; the first point is the start and the last reaches the target.
fn assert_reaches(
    checker: &dyn Checker,
    robot: &RobotModel,
    group: &PlanningGroup,
    base: &[f64],
    target: &PoseTarget,
    start: &[f64],
    traj: &Trajectory,
) {
    let positions: Vec<Vec<f64>> = traj.points.iter().map(|p| p.positions.clone()).collect();
    let first = positions.first().expect("a trajectory");
    assert!(
        group.space.distance(first, start) < 1e-9,
        "starts elsewhere"
    );
    let last = positions.last().expect("a trajectory");
    let reached = link_pose(robot, group, base, last, target.link);
    let dp = (reached.translation.vector - target.pose.translation.vector).norm();
    assert!(dp <= target.position_tolerance, "position off by {dp}");
    if let Some(tol) = target.orientation_tolerance {
        let dr = reached.rotation.angle_to(&target.pose.rotation);
        assert!(dr <= tol, "orientation off by {dr}");
    }
    assert!(group.space.within_limits(last));
    let mut motions = MotionBatch::new(group.space.dof());
    for w in positions.windows(2) {
        motions.push(&w[0], &w[1]).expect("motion");
    }
    let ok = checker.check_motions(&motions, 0.005).expect("check");
    assert!(ok.iter().all(|&v| v), "a trajectory segment collides");
}

#[test]
fn plans_the_bundled_arm_to_poses_around_the_shelf() {
    let b = bundled();
    let (robot, group, base, tip) = (&b.robot, &b.group, &b.base, b.tip);
    let (checker, start) = b.checker_and_start();
    // Targets: the tool poses of random collision-free configurations (reachable and free by
    // construction), with the full pose and with the position only.
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let s = &group.space;
    let mut planned = 0;
    let mut tried = 0;
    while tried < 6 {
        let q = s.sample_uniform(&mut rng);
        if !checker.check_config(&q).expect("check") {
            continue;
        }
        let pose = link_pose(robot, group, base, &q, tip);
        let target = if tried % 2 == 0 {
            PoseTarget::pose(tip, pose)
        } else {
            PoseTarget::position(tip, pose.translation.vector)
        };
        tried += 1;
        let solver = IkSolver::new(robot, group, base, target.clone()).expect("solver");
        let mut req = PlanRequest::new(start.clone(), Vec::new(), PlannerId::RrtConnect);
        req.seed = 3;
        req.time_limit = Duration::from_secs(20);
        let opts = IkOptions::default();
        match plan_to_pose(&checker, &req, &solver, &opts) {
            Ok(pp) => {
                planned += 1;
                let traj = &pp.result.trajectory;
                assert_reaches(&checker, robot, group, base, &target, &start, traj);
                assert_eq!(pp.result.path.last(), Some(&pp.goal.config));
                // Deterministic for the seed.
                let again = plan_to_pose(&checker, &req, &solver, &opts).expect("plans again");
                assert_eq!(again.result.path, pp.result.path);
            }
            Err(e) => panic!("pose {tried} not planned: {e}"),
        }
    }
    assert_eq!(planned, 6);
}

#[test]
fn pose_goal_errors_say_why() {
    let b = bundled();
    let (robot, group, base, tip) = (&b.robot, &b.group, &b.base, b.tip);
    let (checker, start) = b.checker_and_start();
    let mut req = PlanRequest::new(start, Vec::new(), PlannerId::RrtConnect);
    req.time_limit = Duration::from_secs(5);
    let opts = IkOptions {
        starts: 48,
        ..IkOptions::default()
    };
    // Out of reach.
    let far = PoseTarget::position(tip, Vector3::new(3.0, 0.0, 0.5));
    let solver = IkSolver::new(robot, group, base, far).expect("solver");
    match plan_to_pose(&checker, &req, &solver, &opts) {
        Err(PlanError::NoIkSolution(m)) => assert!(m.contains("48 starting"), "{m}"),
        other => panic!("expected no IK solution, got {other:?}"),
    }
    // Inside an obstacle: reachable, every solution in collision.
    let o = b
        .scene
        .iter()
        .find(|o| o.id == "shelf_board")
        .expect("the bundled scene has a shelf board");
    let inside = PoseTarget::position(tip, o.pose.translation.vector);
    let solver = IkSolver::new(robot, group, base, inside.clone()).expect("solver");
    let goals = free_goals(&checker, &solver, &req.start, &opts).expect("search");
    if goals.found > 0 {
        assert!(
            goals.free.is_empty(),
            "a tool inside '{}' called free",
            o.id
        );
        match plan_to_pose(&checker, &req, &solver, &opts) {
            Err(PlanError::InvalidGoal(m)) => assert!(m.contains("in collision"), "{m}"),
            other => panic!("expected a goal in collision, got {other:?}"),
        }
    }
}

#[test]
fn panda_ik_and_plans_to_the_hand_poses_of_mbm_goals() {
    let Some(data) = common::mbm_or_skip("panda_ik_and_plans_to_the_hand_poses_of_mbm_goals")
    else {
        return;
    };
    let panda = mbm::load_robot(&data, "panda").expect("panda loads");
    let (robot, group) = (&panda.model, &panda.group);
    let tip = default_tip_link(robot, group).expect("tip");
    assert_eq!(robot.tree.links[tip].name, "panda_link8");

    // Inverse kinematics of random full poses (7 joints, one redundant): nearly all solved.
    let base = robot.tree.neutral_state();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let s = &group.space;
    let mut solved = 0;
    for _ in 0..30 {
        let q = s.sample_uniform(&mut rng);
        let pose = link_pose(robot, group, &base, &q, tip);
        let solver =
            IkSolver::new(robot, group, &base, PoseTarget::pose(tip, pose)).expect("solver");
        let sols = solver.solve(None, &IkOptions::default()).expect("solve");
        if let Some(sol) = sols.first() {
            let reached = link_pose(robot, group, &base, &sol.config, tip);
            assert!(
                (reached.translation.vector - pose.translation.vector).norm()
                    <= DEFAULT_POSITION_TOLERANCE
            );
            assert!(reached.rotation.angle_to(&pose.rotation) <= DEFAULT_ORIENTATION_TOLERANCE);
            assert!(s.within_limits(&sol.config));
            solved += 1;
        }
    }
    eprintln!("Panda: {solved} of 30 reachable poses solved");
    assert!(solved >= 27, "{solved} of 30 reachable Panda poses solved");

    // MBM problems: the hand pose of the goal configuration as a pose goal.
    let problems = mbm::load_problems_where(&data, "panda", |scene, index| {
        (scene == "table_pick" || scene == "bookshelf_small") && index <= 3
    })
    .expect("problems load");
    assert_eq!(problems.len(), 6);
    let mut planned = 0;
    for prob in &problems {
        let base = panda.start_full_state(prob);
        let Ok((start, goal)) = panda.start_goal(prob) else {
            continue;
        };
        let checker = CpuChecker::new(robot, group, &base, &prob.scene, CheckerOptions::default())
            .expect("checker");
        if !(checker.check_config(&start).expect("check")
            && checker.check_config(&goal).expect("check"))
        {
            continue;
        }
        let target = PoseTarget::pose(tip, link_pose(robot, group, &base, &goal, tip));
        let solver = IkSolver::new(robot, group, &base, target.clone()).expect("solver");
        let mut req = PlanRequest::new(start.clone(), Vec::new(), PlannerId::RrtConnect);
        req.time_limit = Duration::from_secs(30);
        let pp = plan_to_pose(&checker, &req, &solver, &IkOptions::default())
            .unwrap_or_else(|e| panic!("{} {}: {e}", prob.scene_name, prob.index));
        let traj = &pp.result.trajectory;
        assert_reaches(&checker, robot, group, &base, &target, &start, traj);
        planned += 1;
    }
    assert!(planned >= 5, "only {planned} MBM pose goals planned");
}

/// `gmp bench ARGS --out DIR` on the MBM data: its JSON report (the run must succeed).
fn run_bench(data: &std::path::Path, args: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gmp"))
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(dir)
        .env("GMP_DATA", data)
        .output()
        .expect("gmp runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn bench_ik_reports_every_robot_and_goal_kind() {
    let Some(data) = common::mbm_or_skip("bench_ik_reports_every_robot_and_goal_kind") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let v = run_bench(
        &data,
        &["ik", "--robots", "panda,ur5", "--poses", "6"],
        dir.path(),
    );
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert_eq!(r["poses"], 6);
        // Reachable by construction: a miss or two is possible, most must be solved.
        assert!(r["solved"].as_u64().expect("count") >= 5, "{r}");
        assert!(r["worst_position_error"].as_f64().expect("error") <= 1e-4);
    }
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .expect("out dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(written
        .iter()
        .any(|n| n.starts_with("ik_") && n.ends_with(".json")));
    assert!(written
        .iter()
        .any(|n| n.starts_with("ik_") && n.ends_with(".md")));
}

/// `solve_where`: the search ends only once a solution is accepted, so it goes on over more
/// starts while none is; `free_goals` accepts the collision-free ones, so a pose whose first
/// solutions all collide still gets a free one.
#[test]
fn the_search_ends_only_with_an_accepted_solution() {
    let b = bundled();
    let (robot, group, base, tip) = (&b.robot, &b.group, &b.base, b.tip);
    let start = b.neutral();
    let q = vec![0.6, -0.4, 1.1, 0.2, 0.9, 0.0];
    let pose = link_pose(robot, group, base, &q, tip);
    let solver = IkSolver::new(robot, group, base, PoseTarget::pose(tip, pose)).expect("solver");
    let opts = IkOptions {
        max_solutions: 2,
        ..IkOptions::default()
    };
    let plain = solver.solve(Some(&start), &opts).expect("solve");
    assert!(plain.len() >= 2, "{} solutions", plain.len());
    // Accepting only solutions the plain search did not find: more found, some accepted,
    // none of them a plain one.
    let (found, kept) = solver
        .solve_where(Some(&start), &opts, |fresh: &[_]| {
            Ok::<_, gpu_motion_planner::robot::ik::IkError>(
                fresh
                    .iter()
                    .map(|s: &gpu_motion_planner::robot::ik::IkSolution| !plain.contains(s))
                    .collect(),
            )
        })
        .expect("solve_where");
    assert_eq!(found.len(), kept.len());
    assert!(found.len() > plain.len());
    let accepted: Vec<_> = found.iter().zip(&kept).filter(|(_, &k)| k).collect();
    assert!(!accepted.is_empty());
    assert!(accepted.iter().all(|(s, _)| !plain.contains(s)));
    // Rejecting everything uses every start and accepts none.
    let (all, none) = solver
        .solve_where(Some(&start), &opts, |fresh: &[_]| {
            Ok::<_, gpu_motion_planner::robot::ik::IkError>(vec![false; fresh.len()])
        })
        .expect("solve_where");
    assert!(none.iter().all(|&k| !k));
    assert!(all.len() >= found.len());
    // The plain search is the accepting-everything one.
    let (every, _) = solver
        .solve_where(Some(&start), &opts, |fresh: &[_]| {
            Ok::<_, gpu_motion_planner::robot::ik::IkError>(vec![true; fresh.len()])
        })
        .expect("solve_where");
    assert_eq!(every, plain);
}

#[test]
fn bench_pose_reports_every_set_size_on_the_same_problems() {
    let Some(data) = common::mbm_or_skip("bench_pose_reports_every_set_size_on_the_same_problems")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let v = run_bench(
        &data,
        &[
            "pose",
            "--robots",
            "panda",
            "--problems",
            "1",
            "--sets",
            "1,8",
            "--candidates",
            "1,2",
        ],
        dir.path(),
    );
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 4);
    for (r, (poses, set)) in rows.iter().zip([(1, 1), (1, 8), (2, 1), (2, 8)]) {
        assert_eq!(
            (&r["goal_poses"], &r["goal_set"]),
            (&serde_json::json!(poses), &serde_json::json!(set))
        );
        if poses == 1 {
            assert_eq!(r["ended_at_another_pose"], 0, "one pose has no other: {r}");
        }
        // The first problem of each of the 7 scenes; the invalid ones left out.
        let valid = r["valid_problems"].as_u64().expect("valid");
        assert!((1..=7).contains(&valid), "{r}");
        let solved = r["solved"].as_u64().expect("solved");
        let failed: u64 = r["failures"]
            .as_object()
            .expect("failures")
            .values()
            .map(|v| v.as_u64().expect("count"))
            .sum();
        assert_eq!(solved + failed, valid, "{r}");
        if (poses, set) == (1, 1) {
            assert_eq!(
                r["ended_at_another_goal"], 0,
                "a set of one has no other goal"
            );
        }
    }
    assert!(rows
        .iter()
        .all(|r| r["valid_problems"] == rows[0]["valid_problems"]));
    let md = std::fs::read_dir(dir.path())
        .expect("out dir")
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().ends_with(".md"))
        .expect("markdown written");
    let text = std::fs::read_to_string(md.path()).expect("read");
    assert!(
        text.contains("| panda | 1 | 8 |") && text.contains("| panda | 2 | 1 |"),
        "{text}"
    );
}

#[test]
fn several_goal_poses_make_one_goal_set_round_by_round() {
    let b = bundled();
    let (robot, group, base, tip) = (&b.robot, &b.group, &b.base, b.tip);
    let (checker, start) = b.checker_and_start();
    // Three reachable, free poses: the tool poses of random free configurations.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut targets = Vec::new();
    while targets.len() < 3 {
        let q = group.space.sample_uniform(&mut rng);
        if checker.check_config(&q).expect("check") {
            targets.push(PoseTarget::pose(
                tip,
                link_pose(robot, group, base, &q, tip),
            ));
        }
    }
    let far = PoseTarget::position(tip, Vector3::new(3.0, 0.0, 0.5));
    let solver = |t: &PoseTarget| IkSolver::new(robot, group, base, t.clone()).expect("solver");
    let mut req = PlanRequest::new(start.clone(), Vec::new(), PlannerId::RrtConnect);
    req.seed = 2;
    req.time_limit = Duration::from_secs(20);
    let opts = IkOptions {
        starts: 32,
        ..IkOptions::default()
    };
    let solvers: Vec<IkSolver> = std::iter::once(&far).chain(&targets).map(solver).collect();
    // Each pose alone, searching for `share` solutions: what each searches for in a set of
    // several poses (its share of the set, at least one).
    let alone = |share: usize| -> Vec<_> {
        let o = IkOptions {
            max_solutions: share,
            ..opts
        };
        solvers
            .iter()
            .map(|s| free_goals(&checker, s, &start, &o).expect("search"))
            .collect()
    };
    let singles = alone(1);
    assert_eq!(singles[0].found, 0, "the far pose is out of reach");
    assert!(singles[1..].iter().all(|g| !g.free.is_empty()));

    // The set handed to the planner: with set size 1, one solution per pose that has one
    // (each pose's nearest of the one it searched for), nearest first.
    let mut seen = Vec::new();
    let pp = plan_to_poses_set(&checker, &req, &solvers, &opts, 1, |r| {
        seen.push(r.clone());
        plan(&checker, r)
    })
    .expect("plans");
    assert_eq!(seen.len(), 1);
    let set: Vec<&Vec<f64>> = std::iter::once(&seen[0].goal)
        .chain(&seen[0].other_goals)
        .collect();
    let mut nearest: Vec<&Vec<f64>> = singles[1..].iter().map(|g| &g.free[0].config).collect();
    let d = |q: &Vec<f64>| group.space.distance(&start, q);
    nearest.sort_by(|a, b| d(a).total_cmp(&d(b)));
    assert_eq!(set, nearest);
    // The pose reached is the one whose solution the path ends at; its search is reported.
    assert!(pp.pose >= 1);
    assert_eq!(pp.goals.len(), 4);
    assert_eq!(pp.goals[pp.pose], singles[pp.pose]);
    assert_eq!(pp.result.path.last(), Some(&pp.goal.config));
    let traj = &pp.result.trajectory;
    assert_reaches(
        &checker,
        robot,
        group,
        base,
        &targets[pp.pose - 1],
        &start,
        traj,
    );

    // With the default size (8): each of the 4 poses searches for 2, and the set takes them
    // round after round, so every pose's nearest comes first.
    let pairs = alone(2);
    let mut nearest: Vec<&Vec<f64>> = pairs[1..].iter().map(|g| &g.free[0].config).collect();
    nearest.sort_by(|a, b| d(a).total_cmp(&d(b)));
    seen.clear();
    let again = plan_to_poses_with(&checker, &req, &solvers, &opts, |r| {
        seen.push(r.clone());
        plan(&checker, r)
    })
    .expect("plans");
    let set: Vec<&Vec<f64>> = std::iter::once(&seen[0].goal)
        .chain(&seen[0].other_goals)
        .collect();
    let available: usize = pairs.iter().map(|g| g.free.len()).sum();
    assert_eq!(set.len(), available.min(8));
    assert_eq!(again.goals, pairs);
    assert_eq!(set[..3], nearest[..]);
    // Deterministic for the seed.
    let third =
        plan_to_poses_with(&checker, &req, &solvers, &opts, |r| plan(&checker, r)).expect("plans");
    assert_eq!(third.result.path, again.result.path);
    assert_eq!(third.pose, again.pose);

    // Nothing reachable: the error counts the poses; no poses at all is refused.
    let nowhere = [solver(&far), solver(&far)];
    match plan_to_poses_with(&checker, &req, &nowhere, &opts, |r| plan(&checker, r)) {
        Err(PlanError::NoIkSolution(m)) => assert!(m.contains("any of the 2 goal poses"), "{m}"),
        other => panic!("expected no IK solution, got {other:?}"),
    }
    match plan_to_poses_with(&checker, &req, &[] as &[IkSolver], &opts, |r| {
        plan(&checker, r)
    }) {
        Err(PlanError::InvalidGoal(m)) => assert!(m.contains("0 goal poses"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }

    // The searches take turns: with the deadline already past, each pose still gets its
    // first batch of starts, so the unreachable pose listed first, allowed 10000 starts,
    // cannot keep the others from theirs; the plan says its inverse kinematics was cut short.
    let hurried = IkOptions {
        starts: 10_000,
        deadline: Some(Instant::now()),
        ..opts
    };
    let cut = plan_to_poses_with(&checker, &req, &solvers, &hurried, |r| plan(&checker, r))
        .expect("plans");
    assert!(cut.ik_cut);
    let tried: Vec<usize> = cut.goals.iter().map(|g| g.tried).collect();
    assert!(tried.iter().all(|&t| t == START_BATCH), "{tried:?}");
    assert_eq!(cut.goals[0].found, 0);
    assert!(cut.pose >= 1);
    assert_eq!(cut.result.path.last(), Some(&cut.goal.config));
    // A time share near 0: once the first round of batches found a free goal, no pose's
    // search goes on, even with no deadline and 10000 starts allowed; a share outside (0, 1]
    // is refused by name.
    let many = IkOptions {
        starts: 10_000,
        ..opts
    };
    let quick = PlanRequest {
        ik_time_share: 1e-9,
        ..req.clone()
    };
    let shared = plan_to_poses_with(&checker, &quick, &solvers, &many, |r| plan(&checker, r))
        .expect("plans");
    assert!(shared.ik_cut);
    let tried: Vec<usize> = shared.goals.iter().map(|g| g.tried).collect();
    assert!(tried.iter().all(|&t| t == START_BATCH), "{tried:?}");
    assert_eq!(shared.result.path.last(), Some(&shared.goal.config));
    for bad in [0.0, -0.5, 1.5, f64::NAN] {
        let r = PlanRequest {
            ik_time_share: bad,
            ..req.clone()
        };
        match plan_to_poses_with(&checker, &r, &solvers, &opts, |r| plan(&checker, r)) {
            Err(PlanError::InvalidRequest(m)) => assert!(m.contains("ik_time_share"), "{m}"),
            other => panic!("expected a refusal of {bad}, got {other:?}"),
        }
    }
    // Only unreachable poses: the error says the search was cut short.
    match plan_to_poses_with(&checker, &req, &nowhere, &hurried, |r| plan(&checker, r)) {
        Err(PlanError::NoIkSolution(m)) => assert!(
            m.contains("32 starting configurations tried in all; the search stopped at the time"),
            "{m}"
        ),
        other => panic!("expected no IK solution, got {other:?}"),
    }
}
