//! The hybrid backend (`collision::hybrid`): calls routed by size between two checkers, the
//! same verdicts and plans as one checker alone. Here both sides are CPU checkers (one with
//! eight-lane checks, one without), so the routing is tested without a GPU;
//! `tests/gpu_parity.rs::gpu_hybrid_plans_like_the_cpu` pairs the CPU with the CUDA backend.

mod common;

use std::time::Duration;

use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use gpu_motion_planner::collision::hybrid::{HybridChecker, Routed, MOTION_BATCH_MIN};
use gpu_motion_planner::collision::{
    make_checker, Backend, Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch,
    RobotShapes,
};
use gpu_motion_planner::mbm;
use gpu_motion_planner::planners::{plan, suited_batch_size, PlanRequest, PlannerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The MBM `robot` and the first problem of `scene`.
fn first_problem(
    data: &std::path::Path,
    robot: &str,
    scene: &str,
) -> (mbm::MbmRobot, mbm::Problem) {
    let r = mbm::load_robot(data, robot).expect("robot");
    let p = mbm::load_problems_where(data, robot, |s, i| s == scene && i == 1)
        .expect("problems")
        .into_iter()
        .next()
        .expect("the problem");
    (r, p)
}

/// The MBM Panda sphere model in the first problem of `scene`: a lane checker and a scalar one
/// (lanes off), both on one thread, the robot and the problem.
fn panda(
    data: &std::path::Path,
    scene: &str,
) -> (CpuChecker, CpuChecker, mbm::MbmRobot, mbm::Problem) {
    let (r, p) = first_problem(data, "panda", scene);
    let lanes = one_thread_checker(&r, &p, RobotShapes::Spheres);
    let mut scalar = one_thread_checker(&r, &p, RobotShapes::Spheres);
    scalar.set_lanes(None);
    assert!(lanes.lane_isa().is_some() && scalar.lane_isa().is_none());
    (lanes, scalar, r, p)
}

#[test]
fn calls_go_by_size_and_verdicts_match_one_checker() {
    let Some(data) = mbm_or_skip("calls_go_by_size_and_verdicts_match_one_checker") else {
        return;
    };
    let (small, large, r, p) = panda(&data, "bookshelf_small");
    let (reference, _, _, _) = panda(&data, "bookshelf_small");
    let space = r.group.space.clone();
    let hybrid = HybridChecker::new(Box::new(small), Box::new(large), 300).expect("hybrid");
    assert_eq!(hybrid.backend(), Backend::Hybrid);
    assert!(!hybrid.backend().batches(), "planners batch as on the CPU");
    assert_eq!(hybrid.min_work(), 300);
    let (start, goal) = r.start_goal(&p).expect("start and goal");
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut random = || -> Vec<f64> {
        (0..space.dof())
            .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
            .collect()
    };
    // Configurations: 299 go to the small side, 300 to the large one.
    for (n, want) in [
        (299, Routed { small: 1, large: 0 }),
        (300, Routed { small: 1, large: 1 }),
    ] {
        let mut b = ConfigBatch::new(space.dof());
        for _ in 0..n {
            b.push(&random()).expect("row");
        }
        let got = hybrid.check_configs(&b).expect("checks");
        assert_eq!(got, reference.check_configs(&b).expect("reference"));
        assert!(
            got.iter().any(|&v| v) && got.iter().any(|&v| !v),
            "mixed verdicts"
        );
        assert_eq!(hybrid.routed(), want, "{n} configurations");
    }
    // Motions: by the configurations their first check visits (segments + 1 each), in batches
    // of at least MOTION_BATCH_MIN motions.
    let res = 0.02;
    let one = |a: &[f64], b: &[f64]| {
        let mut m = MotionBatch::new(space.dof());
        m.push(a, b).expect("motion");
        m
    };
    let short = one(&start, &start.iter().map(|x| x + 0.001).collect::<Vec<_>>());
    hybrid.check_motions(&short, res).expect("short");
    assert_eq!(
        hybrid.routed().small,
        2,
        "a two-configuration motion stays small"
    );
    // A few long motions stay small: the CPU's check stops at the first collision.
    let long = one(&start, &goal);
    let fine = 0.002;
    assert!(space.segments(&start, &goal, fine) + 1 > 300);
    let got = hybrid.check_motions(&long, fine).expect("long");
    assert_eq!(
        got,
        reference.check_motions(&long, fine).expect("reference")
    );
    assert_eq!(hybrid.routed().small, 3, "a single long motion stays small");
    let mut fifteen = MotionBatch::new(space.dof());
    for _ in 0..MOTION_BATCH_MIN - 1 {
        fifteen.push(&start, &goal).expect("motion");
    }
    hybrid.check_motions(&fifteen, res).expect("fifteen");
    assert_eq!(
        hybrid.routed().small,
        4,
        "fewer than MOTION_BATCH_MIN motions stay small"
    );
    let mut many = MotionBatch::new(space.dof());
    for _ in 0..200 {
        many.push(&random(), &random()).expect("motion");
    }
    many.push(&start, &goal).expect("motion");
    let got = hybrid.check_motions(&many, res).expect("many");
    assert_eq!(hybrid.routed().large, 2, "201 motions go to the large side");
    assert_eq!(got, reference.check_motions(&many, res).expect("reference"));
    assert!(
        got.iter().any(|&v| v) && got.iter().any(|&v| !v),
        "mixed verdicts"
    );
    // Both sides counted what they computed.
    assert!(hybrid.configs_evaluated().expect("counted") > 599);
    // Bad input is named by the side that gets it.
    let bad = ConfigBatch::from_rows(space.dof(), &[vec![f64::NAN; space.dof()]]).expect("row");
    let e = hybrid.check_configs(&bad).expect_err("NaN refused");
    assert!(e.to_string().contains("not a finite number"), "{e}");
}

#[test]
fn checkers_of_different_groups_are_refused() {
    let Some(data) = mbm_or_skip("checkers_of_different_groups_are_refused") else {
        return;
    };
    let (panda_checker, _, _, _) = panda(&data, "table_pick");
    let (ur5, p) = first_problem(&data, "ur5", "table_pick");
    let other = one_thread_checker(&ur5, &p, RobotShapes::Spheres);
    let e = HybridChecker::new(Box::new(panda_checker), Box::new(other), 100)
        .err()
        .expect("refused");
    let text = e.to_string();
    assert!(
        text.contains("hybrid") && text.contains("panda_joint1"),
        "{text}"
    );
}

/// A hybrid checker plans exactly as the CPU checker for a seed (same batch size, same
/// verdicts), whichever side answers each call: RRT-Connect (single motions: the small side)
/// and PRM (batches of connections: the large side too).
#[test]
fn hybrid_plans_are_the_cpu_plans() {
    let Some(data) = mbm_or_skip("hybrid_plans_are_the_cpu_plans") else {
        return;
    };
    assert_eq!(suited_batch_size(PlannerId::RrtConnect, Backend::Hybrid), 1);
    for (planner, scene) in [
        (PlannerId::RrtConnect, "bookshelf_small"),
        (PlannerId::RrtConnect, "cage"),
        (PlannerId::RrtConnect, "table_under_pick"),
        (PlannerId::Prm, "bookshelf_small"),
    ] {
        let (small, large, r, p) = panda(&data, scene);
        let (reference, _, _, _) = panda(&data, scene);
        let hybrid = HybridChecker::new(Box::new(small), Box::new(large), 64).expect("hybrid");
        let (start, goal) = r.start_goal(&p).expect("start and goal");
        let mut req = PlanRequest::new(start, goal, planner);
        req.seed = 3;
        req.resolution = 0.02;
        req.time_limit = Duration::from_secs(120);
        let what = format!("{planner} on {scene}");
        let a = plan(&hybrid, &req).unwrap_or_else(|e| panic!("{what}: hybrid: {e}"));
        let b = plan(&reference, &req).unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
        assert_eq!(a.stats.batch_size, b.stats.batch_size, "{what}");
        assert_eq!(a.raw_path, b.raw_path, "{what}: raw path");
        assert_eq!(a.path, b.path, "{what}: path");
        assert_eq!(a.trajectory, b.trajectory, "{what}: trajectory");
        let routed = hybrid.routed();
        assert!(routed.small > 0, "{what}: {routed:?}");
        if planner == PlannerId::Prm {
            assert!(
                routed.large > 0,
                "{what}: connections on the large side ({routed:?})"
            );
        } else {
            assert_eq!(a.stats.batch_size, 1, "{what}");
        }
    }
}

/// `make_checker` knows the hybrid backend: without a GPU it is a clear error like `cuda`, and
/// `auto` falls back to the CPU.
#[test]
fn hybrid_backend_needs_a_gpu_and_auto_falls_back() {
    if gpu_motion_planner::gpu::gpu_available() {
        eprintln!("SKIP hybrid_backend_needs_a_gpu_and_auto_falls_back: a GPU is present");
        return;
    }
    let Some(data) = mbm_or_skip("hybrid_backend_needs_a_gpu_and_auto_falls_back") else {
        return;
    };
    let (r, p) = first_problem(&data, "panda", "box");
    let opts = CheckerOptions {
        shapes: RobotShapes::Spheres,
        ..Default::default()
    };
    let base = r.start_full_state(&p);
    let e = make_checker("hybrid", &r.model, &r.group, &base, &p.scene, opts)
        .err()
        .expect("no GPU");
    assert!(e.to_string().contains("cuda"), "{e}");
    let auto = make_checker("auto", &r.model, &r.group, &base, &p.scene, opts).expect("auto");
    assert_eq!(auto.backend(), Backend::Cpu);
    let e = make_checker("gpu", &r.model, &r.group, &base, &p.scene, opts)
        .err()
        .expect("unknown");
    assert!(e.to_string().contains("hybrid"), "{e}");
}

/// A lazily started large side starts at the first large call only; one that fails to start,
/// or checks another planning group, leaves every call to the small side (same verdicts).
#[test]
fn the_large_side_starts_at_its_first_call_or_never() {
    let Some(data) = mbm_or_skip("the_large_side_starts_at_its_first_call_or_never") else {
        return;
    };
    let (small, _, r, _) = panda(&data, "table_pick");
    let (reference, _, _, _) = panda(&data, "table_pick");
    let space = r.group.space.clone();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut batch = |n: usize| {
        let mut b = ConfigBatch::new(space.dof());
        for _ in 0..n {
            let q: Vec<f64> = (0..space.dof())
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                .collect();
            b.push(&q).expect("row");
        }
        b
    };
    let (few, many) = (batch(10), batch(500));
    let want_few = reference.check_configs(&few).expect("reference");
    let want_many = reference.check_configs(&many).expect("reference");
    // Started at the first large call, once.
    let starts = Arc::new(AtomicUsize::new(0));
    let counter = starts.clone();
    let data2 = data.clone();
    let hybrid = HybridChecker::lazy(
        Box::new(small),
        Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let (_, large, _, _) = panda(&data2, "table_pick");
            Ok(Box::new(large) as Box<dyn Checker>)
        }),
        100,
    );
    assert_eq!(hybrid.check_configs(&few).expect("few"), want_few);
    assert_eq!(
        starts.load(Ordering::SeqCst),
        0,
        "not started by a small call"
    );
    assert!(!hybrid.large_started());
    assert_eq!(hybrid.check_configs(&many).expect("many"), want_many);
    assert_eq!(hybrid.check_configs(&many).expect("many"), want_many);
    assert_eq!(starts.load(Ordering::SeqCst), 1, "started once");
    assert!(hybrid.large_started());
    assert_eq!(hybrid.routed(), Routed { small: 1, large: 2 });
    // A large side that cannot start, or plans another group: the small side answers.
    let (ur5, q) = first_problem(&data, "ur5", "table_pick");
    let builders: Vec<gpu_motion_planner::collision::hybrid::LargeBuilder> = vec![
        Box::new(|| {
            Err(gpu_motion_planner::collision::CollisionError::Backend {
                backend: "test".into(),
                message: "no device".into(),
            })
        }),
        Box::new(move || {
            Ok(Box::new(one_thread_checker(&ur5, &q, RobotShapes::Spheres)) as Box<dyn Checker>)
        }),
    ];
    for build in builders {
        let (small, _, _, _) = panda(&data, "table_pick");
        let hybrid = HybridChecker::lazy(Box::new(small), build, 100);
        assert_eq!(hybrid.check_configs(&many).expect("many"), want_many);
        assert!(!hybrid.large_started());
        assert_eq!(hybrid.routed(), Routed { small: 1, large: 0 });
    }
}
