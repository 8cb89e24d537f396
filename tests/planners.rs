mod common;

use std::time::Duration;

use common::*;
use gpu_motion_planner::collision::{Backend, Checker};
use gpu_motion_planner::planners::prm::{Prm, RoadmapFileError};
use gpu_motion_planner::planners::rrt_connect::STUCK_AFTER;
use gpu_motion_planner::planners::{
    attempt_seed, plan, PlanError, PlanRequest, PlanResult, PlannerId, MAX_ATTEMPTS,
};
use gpu_motion_planner::trajectory::path_length;

fn request(start: &[f64], goal: &[f64], planner: PlannerId, seed: u64) -> PlanRequest {
    let mut r = PlanRequest::new(start.to_vec(), goal.to_vec(), planner);
    r.seed = seed;
    r.resolution = RES;
    r.time_limit = Duration::from_secs(20);
    r.batch_size = Some(32);
    if planner == PlannerId::RrtStar {
        r.max_iterations = Some(60);
    }
    r
}

fn assert_good(world: &BoxWorld, req: &PlanRequest, res: &PlanResult) {
    let s = &world.space;
    let traj = &res.trajectory;
    assert!(same_config(s, &traj.points[0].positions, &req.start));
    assert_eq!(
        traj.points[0].positions, req.start,
        "starts exactly at start"
    );
    let last = &traj.points.last().unwrap().positions;
    assert!(
        same_config(s, last, &req.goal),
        "{last:?} vs {:?}",
        req.goal
    );
    assert_eq!(res.path.first().unwrap(), &req.start);
    assert_eq!(res.path.last().unwrap(), &req.goal);
    assert_eq!(res.raw_path.first().unwrap(), &req.start);
    assert_eq!(res.raw_path.last().unwrap(), &req.goal);
    for q in res.path.iter().chain(&res.raw_path) {
        assert!(s.within_limits(q), "{q:?} outside limits");
    }
    dense_recheck(world, traj, req.resolution, req.vel_scale, req.acc_scale).unwrap();
    let st = &res.stats;
    assert!(st.path_length_after <= st.path_length_before + 1e-9);
    assert!((st.path_length_after - path_length(s, &res.path)).abs() < 1e-9);
    assert!(st.collision_checks >= st.configs_checked + st.motions_checked);
}

#[test]
fn every_planner_solves_the_small_problems() {
    for make in [wall_2d, window_3d, continuous_2d] {
        for planner in PlannerId::ALL {
            let (world, start, goal) = make();
            let req = request(&start, &goal, planner, 7);
            let res = plan(&world, &req)
                .unwrap_or_else(|e| panic!("{planner} on {start:?}->{goal:?}: {e}"));
            assert_eq!(res.planner, planner);
            assert_good(&world, &req, &res);
        }
    }
}

#[test]
fn planners_are_deterministic_for_a_seed() {
    for planner in PlannerId::ALL {
        let (world, start, goal) = window_3d();
        let req = request(&start, &goal, planner, 42);
        let a = plan(&world, &req).unwrap();
        let b = plan(&world, &req).unwrap();
        assert_eq!(a.raw_path, b.raw_path, "{planner}");
        assert_eq!(a.path, b.path, "{planner}");
        assert_eq!(a.trajectory, b.trajectory, "{planner}");
        assert_eq!(
            a.stats.collision_checks, b.stats.collision_checks,
            "{planner}"
        );
        assert_eq!(
            a.stats.roadmap_vertices, b.stats.roadmap_vertices,
            "{planner}"
        );
    }
}

#[test]
fn continuous_joint_paths_cross_the_seam() {
    for planner in PlannerId::ALL {
        let (world, start, goal) = continuous_2d();
        let req = request(&start, &goal, planner, 3);
        let res = plan(&world, &req).unwrap();
        // Without the wrap the theta joint alone would have to travel 5 rad (and through the
        // block); across the seam the whole way is about 1.5.
        assert!(
            res.stats.path_length_after < 2.5,
            "{planner}: length {}",
            res.stats.path_length_after
        );
        assert_good(&world, &req, &res);
    }
}

#[test]
fn rrt_star_cost_decreases_over_time() {
    let (world, start, goal) = wall_2d();
    let mut req = request(&start, &goal, PlannerId::RrtStar, 11);
    req.max_iterations = Some(400);
    req.batch_size = Some(16);
    req.shortcut_rounds = 0;
    let res = plan(&world, &req).unwrap();
    let costs: Vec<f64> = res.stats.cost_over_time.iter().map(|c| c.1).collect();
    assert!(costs.len() >= 2, "expected improvements, got {costs:?}");
    assert!(costs.windows(2).all(|w| w[1] < w[0]), "{costs:?}");
    assert!(res
        .stats
        .cost_over_time
        .windows(2)
        .all(|w| w[1].0 >= w[0].0));
    // The best path goes over the wall's top corners: about 0.2 + 0.5 + ... ~ 1.3.
    let optimum = 2.0 * (0.25f64.powi(2) + 0.5f64.powi(2)).sqrt() + 0.1;
    let last = *costs.last().unwrap();
    assert!(last < costs[0]);
    assert!(
        last < 1.25 * optimum,
        "final cost {last}, optimum ~{optimum}"
    );
    assert!((res.stats.path_length_before - last).abs() < 1e-6);
    assert_good(&world, &req, &res);
}

#[test]
fn impossible_problems_end_with_no_path() {
    for planner in PlannerId::ALL {
        let (world, start, goal) = enclosed_goal();
        let mut req = request(&start, &goal, planner, 1);
        req.time_limit = Duration::from_millis(300);
        req.max_iterations = None;
        match plan(&world, &req) {
            Err(PlanError::NoPath {
                planner: p,
                time_limit,
                iterations,
                ..
            }) => {
                assert_eq!(p, planner);
                assert_eq!(time_limit, req.time_limit);
                assert!(iterations > 0);
            }
            other => panic!("{planner}: expected NoPath, got {other:?}"),
        }
    }
}

#[test]
fn bad_start_and_goal_are_named() {
    let (world, start, goal) = wall_2d();
    let cases: Vec<(Vec<f64>, Vec<f64>, bool, &str)> = vec![
        (vec![0.2], goal.clone(), true, "values"),
        (vec![f64::NAN, 0.2], goal.clone(), true, "non-finite"),
        (vec![1.5, 0.2], goal.clone(), true, "'j0'"),
        (vec![0.5, 0.3], goal.clone(), true, "collision"),
        (start.clone(), vec![0.8, -0.1], false, "'j1'"),
        (start.clone(), vec![0.5, 0.5], false, "collision"),
    ];
    for (s, g, is_start, needle) in cases {
        for planner in PlannerId::ALL {
            let req = request(&s, &g, planner, 0);
            let err = plan(&world, &req).unwrap_err();
            let msg = err.to_string();
            match (&err, is_start) {
                (PlanError::InvalidStart(_), true) | (PlanError::InvalidGoal(_), false) => {}
                _ => panic!("{planner}: wrong error {err:?}"),
            }
            assert!(msg.contains(needle), "{msg}");
        }
    }
    let mut req = request(&start, &goal, PlannerId::Rrt, 0);
    req.resolution = 0.0;
    assert!(matches!(
        plan(&world, &req),
        Err(PlanError::InvalidRequest(_))
    ));
    for gain in [-0.1, 1.0, f64::NAN] {
        let mut req = request(&start, &goal, PlannerId::RrtConnect, 0);
        req.shortcut_min_gain = gain;
        match plan(&world, &req) {
            Err(PlanError::InvalidRequest(m)) => assert!(m.contains("shortcut_min_gain"), "{m}"),
            other => panic!("shortcut_min_gain {gain}: {other:?}"),
        }
    }
    let mut req = request(&start, &goal, PlannerId::RrtConnect, 0);
    req.shortcut_refinements = 7;
    match plan(&world, &req) {
        Err(PlanError::InvalidRequest(m)) => assert!(m.contains("shortcut_refinements"), "{m}"),
        other => panic!("shortcut_refinements 7: {other:?}"),
    }
    for r in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        let mut req = request(&start, &goal, PlannerId::RrtConnect, 0);
        req.dd_radius = Some(r);
        match plan(&world, &req) {
            Err(PlanError::InvalidRequest(m)) => assert!(m.contains("dd_radius"), "{m}"),
            other => panic!("dd_radius {r}: {other:?}"),
        }
    }
}

#[test]
fn prm_checks_motions_in_few_large_batches() {
    let (mut world, start, goal) = window_3d();
    world.backend = Backend::Cuda; // the batches a GPU gets
    let req = request(&start, &goal, PlannerId::Prm, 5);
    let res = plan(&world, &req).unwrap();
    let (config_calls, configs, motion_calls, motions) = world.calls();
    let st = &res.stats;
    // Per iteration: one config batch and one motion batch; plus start/goal, shortcutting
    // rounds and the final validation.
    assert!(
        config_calls <= st.iterations + 2,
        "{config_calls} config calls"
    );
    assert!(
        motion_calls <= st.iterations + 1 + req.shortcut_rounds + 4,
        "{motion_calls} motion calls for {} iterations",
        st.iterations
    );
    assert!(
        motions >= 10 * motion_calls,
        "{motions} motions in {motion_calls} calls"
    );
    assert!(configs >= 32 * st.iterations);
    assert_eq!(st.motion_batches as usize, motion_calls);
    assert_eq!(st.motions_checked as usize, motions);
    assert_eq!(st.configs_checked as usize, configs);
}

#[test]
fn rrt_family_batches_motions() {
    for planner in [PlannerId::Rrt, PlannerId::RrtStar, PlannerId::RrtConnect] {
        let (mut world, start, goal) = window_3d();
        world.backend = Backend::Cuda; // the batches a GPU gets
        let req = request(&start, &goal, planner, 9);
        let res = plan(&world, &req).unwrap();
        let (_, _, motion_calls, motions) = world.calls();
        let st = &res.stats;
        assert!(
            motion_calls <= 2 * st.iterations + req.shortcut_rounds + 4,
            "{planner}: {motion_calls} calls for {} iterations",
            st.iterations
        );
        assert!(
            motions >= 5 * motion_calls,
            "{planner}: {motions} in {motion_calls}"
        );
    }
}

/// On the CPU the planners and the shortcutting check motions one at a time and skip those
/// whose verdict would not be read; on a GPU they check them in batches. The result must be
/// the same, with no more motions checked on the CPU.
#[test]
fn cpu_and_gpu_checking_orders_give_the_same_plans() {
    for make in [wall_2d, window_3d, continuous_2d] {
        for planner in PlannerId::ALL {
            let (cpu, start, goal) = make();
            let (mut gpu, _, _) = make();
            gpu.backend = Backend::Cuda;
            let req = request(&start, &goal, planner, 13);
            let a = plan(&cpu, &req).unwrap_or_else(|e| panic!("{planner} on the CPU: {e}"));
            let b = plan(&gpu, &req).unwrap_or_else(|e| panic!("{planner} batched: {e}"));
            assert_eq!(a.raw_path, b.raw_path, "{planner}");
            assert_eq!(a.path, b.path, "{planner}");
            assert_eq!(a.trajectory, b.trajectory, "{planner}");
            assert_eq!(a.stats.iterations, b.stats.iterations, "{planner}");
            assert_eq!(
                a.stats.roadmap_vertices, b.stats.roadmap_vertices,
                "{planner}"
            );
            let (_, _, _, cpu_motions) = cpu.calls();
            let (_, _, _, gpu_motions) = gpu.calls();
            assert!(
                cpu_motions <= gpu_motions,
                "{planner}: {cpu_motions} motions checked on the CPU, {gpu_motions} batched"
            );
        }
    }
}

#[test]
fn lazy_prm_checks_only_candidate_edges() {
    let (world, start, goal) = window_3d();
    let req = request(&start, &goal, PlannerId::LazyPrm, 5);
    let mut prm = Prm::new(world.space()).unwrap();
    let res = prm.solve(&world, &req).unwrap();
    let labels = prm.roadmap().edges();
    let unknown = labels
        .iter()
        .filter(|e| e.label == gpu_motion_planner::roadmap::EdgeLabel::Unknown)
        .count();
    assert!(unknown > 0, "lazy PRM left no edge unchecked");
    assert!(
        unknown * 2 > labels.len(),
        "{unknown} of {} unknown",
        labels.len()
    );
    assert_good(&world, &req, &res);
}

#[test]
fn prm_roadmap_persists_across_queries_and_files() {
    let (world, start, goal) = window_3d();
    let mut prm = Prm::new(world.space()).unwrap();
    let first = prm
        .solve(&world, &request(&start, &goal, PlannerId::Prm, 2))
        .unwrap();
    let vertices = prm.roadmap().num_vertices();
    assert_eq!(first.stats.roadmap_vertices, vertices);

    // A second query between other free configurations reuses the roadmap.
    let (s2, g2) = (vec![0.15, 0.8, 0.5], vec![0.85, 0.5, 0.8]);
    let req2 = request(&s2, &g2, PlannerId::Prm, 2);
    let second = prm.solve(&world, &req2).unwrap();
    assert_good(&world, &req2, &second);
    assert!(second.stats.configs_checked < first.stats.configs_checked);

    // Save, load, and plan again without sampling.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("roadmap.json");
    prm.save(&file).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "temporary file left behind: {names:?}");
    let mut loaded = Prm::load(&file, world.space()).unwrap();
    assert_eq!(loaded.roadmap(), prm.roadmap());
    let again = loaded.solve(&world, &req2).unwrap();
    assert_eq!(again.raw_path, second.raw_path);
    assert_eq!(again.stats.iterations, 0);

    // Another robot is refused.
    let other = space(3, &[2]);
    match Prm::load(&file, &other) {
        Err(RoadmapFileError::WrongRobot { .. }) => {}
        other => panic!("expected WrongRobot, got {other:?}"),
    }
    let mut renamed = world.space().clone();
    renamed.names[0] = "shoulder".into();
    assert!(matches!(
        Prm::load(&file, &renamed),
        Err(RoadmapFileError::WrongRobot { .. })
    ));
    // A checker for another space is refused at query time.
    let (w2, s, g) = wall_2d();
    assert!(matches!(
        prm.solve(&w2, &request(&s, &g, PlannerId::Prm, 0)),
        Err(PlanError::RoadmapMismatch { .. })
    ));
    // Garbage is a format error, a missing file an I/O error.
    std::fs::write(&file, "{not json").unwrap();
    assert!(matches!(
        Prm::load(&file, world.space()),
        Err(RoadmapFileError::Format { .. })
    ));
    assert!(matches!(
        Prm::load(&dir.path().join("missing.json"), world.space()),
        Err(RoadmapFileError::Io { .. })
    ));
}

#[test]
fn planner_ids_parse_and_print() {
    for p in PlannerId::ALL {
        assert_eq!(p.to_string().parse::<PlannerId>().unwrap(), p);
    }
    assert_eq!(
        "rrt_connect".parse::<PlannerId>().unwrap(),
        PlannerId::RrtConnect
    );
    assert_eq!("lazy_prm".parse::<PlannerId>().unwrap(), PlannerId::LazyPrm);
    let e = "rrt-star".parse::<PlannerId>().unwrap_err();
    assert!(e.to_string().contains("rrt-star"));
}

#[test]
fn start_equal_to_goal_is_a_trivial_plan() {
    let (world, start, _) = wall_2d();
    let req = request(&start, &start, PlannerId::RrtConnect, 0);
    let res = plan(&world, &req).unwrap();
    assert_eq!(res.trajectory.points.len(), 1);
    assert_eq!(res.trajectory.points[0].positions, start);
}

/// RRT-Connect checks the straight motion from start to goal first: where it is free, the
/// raw path is that motion and no tree is grown; where it is blocked, the trees are grown.
#[test]
fn rrt_connect_takes_the_straight_motion_when_it_is_free() {
    let (world, start, _) = wall_2d();
    // The wall covers x in [0.45, 0.55], y in [0, 0.7]: this goal is on the start's side.
    let goal = vec![0.3, 0.9];
    let req = request(&start, &goal, PlannerId::RrtConnect, 5);
    let res = plan(&world, &req).expect("plans");
    assert_eq!(res.raw_path, vec![start.clone(), goal.clone()]);
    assert_eq!(res.stats.iterations, 0);
    assert_good(&world, &req, &res);

    let (world, start, goal) = wall_2d();
    let req = request(&start, &goal, PlannerId::RrtConnect, 5);
    let res = plan(&world, &req).expect("plans around the wall");
    assert!(
        res.raw_path.len() > 2,
        "the straight motion crosses the wall"
    );
    assert!(res.stats.iterations > 0);
    assert_good(&world, &req, &res);
}

/// An RRT-Connect request on `enclosed_goal` (unsolvable): one sample per iteration, a fixed
/// number of iterations, no time limit in play.
fn enclosed_request(dynamic_domain: bool, balance_trees: bool) -> (BoxWorld, PlanRequest) {
    one_sample_request(enclosed_goal(), dynamic_domain, balance_trees)
}

/// An RRT-Connect request on `(world, start, goal)`: one sample per iteration, a fixed number
/// of iterations, no time limit in play.
fn one_sample_request(
    (world, start, goal): (BoxWorld, Vec<f64>, Vec<f64>),
    dynamic_domain: bool,
    balance_trees: bool,
) -> (BoxWorld, PlanRequest) {
    let mut req = request(&start, &goal, PlannerId::RrtConnect, 11);
    req.batch_size = Some(1);
    req.max_iterations = Some(4000);
    req.time_limit = Duration::from_secs(600);
    req.dynamic_domain = dynamic_domain;
    req.balance_trees = balance_trees;
    (world, req)
}

/// Dynamic domain: once an extension from the enclosed goal fails, samples farther from it
/// than its radius (here 2 x 0.05) are dropped without a check, so the same iterations check
/// far fewer motions.
#[test]
fn dynamic_domain_drops_samples_outside_the_domain_unchecked() {
    let mut motions = Vec::new();
    for dd in [true, false] {
        let (world, mut req) = enclosed_request(dd, true);
        req.range = Some(0.05);
        match plan(&world, &req) {
            Err(PlanError::NoPath { iterations, .. }) => assert_eq!(iterations, 4000),
            other => panic!("dynamic domain {dd}: expected NoPath, got {other:?}"),
        }
        motions.push(world.calls().3);
    }
    assert!(
        2 * motions[0] < motions[1],
        "motions checked with dynamic domain {} vs without {}",
        motions[0],
        motions[1]
    );
}

/// A 2-DOF world whose goal sits in a pocket 0.04 wide (0.028 after the world's margin)
/// closed on all sides: the goal's tree can hardly grow, every extension out of the pocket
/// fails.
fn pocket_goal() -> (BoxWorld, Vec<f64>, Vec<f64>) {
    let b = |min: [f64; 2], max: [f64; 2]| Aabb {
        min: min.to_vec(),
        max: max.to_vec(),
    };
    let world = BoxWorld::new(
        space(2, &[]),
        vec![
            b([0.7, 0.7], [0.9, 0.78]),
            b([0.7, 0.82], [0.9, 0.9]),
            b([0.7, 0.7], [0.78, 0.9]),
            b([0.82, 0.7], [0.9, 0.9]),
        ],
    );
    (world, vec![0.2, 0.2], vec![0.8, 0.8])
}

/// Tree balance extends the smaller tree again, but a tree whose extensions keep failing
/// (the pocketed goal's) must not starve the other one: the start's tree still grows. (With
/// a small tree that always keeps the turn, as in VAMP, the start's tree stops at 2 vertices.)
#[test]
fn a_stuck_tree_does_not_starve_the_other() {
    let mut vertices = Vec::new();
    for (dd, balance) in [(true, true), (false, true), (true, false)] {
        let (world, req) = one_sample_request(pocket_goal(), dd, balance);
        match plan(&world, &req) {
            Err(PlanError::NoPath { vertices: v, .. }) => vertices.push(v),
            other => panic!("dd {dd}, balance {balance}: expected NoPath, got {other:?}"),
        }
    }
    // The stuck tree yields one turn per STUCK_AFTER failures in a row; without balance the
    // trees take turns.
    let floor = 4000 / (2 * STUCK_AFTER);
    assert!(
        vertices[0] >= floor,
        "dynamic domain and balance: {vertices:?}"
    );
    assert!(vertices[1] >= floor, "balance: {vertices:?}");
    assert!(vertices[2] >= 1000, "no balance: {vertices:?}");
}

/// Parallel attempts (`PlanRequest::attempts`): the returned raw path is the one the winning
/// attempt finds when it runs alone with its own seed (the attempts do not disturb each other),
/// and repeated runs pick the same winner whatever the threads' timing.
#[test]
fn parallel_attempts_are_independent_and_deterministic() {
    let mut winners = Vec::new();
    for planner in [PlannerId::RrtConnect, PlannerId::Rrt] {
        for (make, seed) in [
            (wall_2d as fn() -> (BoxWorld, Vec<f64>, Vec<f64>), 3),
            (window_3d, 5),
            (wall_2d, 8),
            (window_3d, 9),
        ] {
            let (world, start, goal) = make();
            let mut req = request(&start, &goal, planner, seed);
            req.batch_size = Some(1);
            req.attempts = 4;
            req.solo_work = 0;
            let raced = plan(&world, &req).unwrap_or_else(|e| panic!("{planner}: {e}"));
            assert_good(&world, &req, &raced);
            let what = format!("{planner} seed {seed}");
            assert_eq!(raced.stats.attempts, 4, "{what}");
            let w = raced.stats.winning_attempt;
            let mut alone = req.clone();
            alone.attempts = 1;
            alone.seed = attempt_seed(seed, w);
            let alone = plan(&world, &alone).unwrap_or_else(|e| panic!("{what} alone: {e}"));
            assert_eq!(raced.raw_path, alone.raw_path, "{what}: attempt {w}");
            assert_eq!(
                raced.stats.iterations, alone.stats.iterations,
                "{what}: attempt {w}"
            );
            for _ in 0..5 {
                let again = plan(&world, &req).unwrap();
                assert_eq!(again.path, raced.path, "{what}: repeat");
                assert_eq!(again.stats.winning_attempt, w, "{what}: repeat");
            }
            winners.push(w);
        }
    }
    // The comparison means something only if attempts other than the first win too.
    assert!(winners.iter().any(|&w| w != 0), "winners {winners:?}");
}

/// Parallel attempts on an unsolvable problem: every attempt runs its iteration budget and
/// the "no path" answer counts all of them.
#[test]
fn parallel_attempts_on_an_impossible_problem_all_run_out() {
    let (world, mut req) = enclosed_request(true, true);
    req.max_iterations = Some(500);
    req.attempts = 3;
    req.solo_work = 0;
    match plan(&world, &req) {
        Err(PlanError::NoPath { iterations, .. }) => assert_eq!(iterations, 3 * 500),
        other => panic!("expected NoPath, got {other:?}"),
    }
}

#[test]
fn attempts_out_of_range_are_named() {
    let (world, start, goal) = wall_2d();
    for attempts in [0, MAX_ATTEMPTS + 1] {
        let mut req = request(&start, &goal, PlannerId::RrtConnect, 1);
        req.attempts = attempts;
        match plan(&world, &req) {
            Err(PlanError::InvalidRequest(m)) => assert!(m.contains("attempts"), "{m}"),
            other => panic!("attempts {attempts}: {other:?}"),
        }
    }
}

/// Parallel attempts give an easy problem to attempt 0 alone: a path it finds within
/// `solo_work` is the single attempt's path, and no other attempt runs.
#[test]
fn attempt_zero_alone_solves_within_its_solo_work() {
    let (world, start, goal) = window_3d();
    let mut req = request(&start, &goal, PlannerId::RrtConnect, 5);
    req.batch_size = Some(1);
    let single = plan(&world, &req).unwrap();
    req.attempts = 8;
    req.solo_work = u64::MAX;
    let raced = plan(&world, &req).unwrap();
    assert_eq!(raced.raw_path, single.raw_path);
    assert_eq!(raced.stats.winning_attempt, 0);
    assert_eq!(
        raced.stats.collision_checks, single.stats.collision_checks,
        "no other attempt checked anything"
    );
    assert_eq!(raced.stats.attempts, 1, "only attempt 0 ran");
}
