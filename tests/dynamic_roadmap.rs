//! The dynamic roadmap (DRM and RGG labels): conservative labels against the exact checker
//! on random obstacle placements, incremental updates equal to a rebuild, replanning around
//! a moved obstacle, determinism.

mod common;

use std::path::Path;

use nalgebra::{Isometry3, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gpu_motion_planner::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch,
};
use gpu_motion_planner::planners::dynamic_roadmap::{
    DynamicRoadmap, DynamicRoadmapOptions, LabelMethod, RggEngine,
};
use gpu_motion_planner::planners::{PlanError, PlanRequest, PlannerId};
use gpu_motion_planner::roadmap::EdgeLabel;
use gpu_motion_planner::robot::{LoadOptions, PlanningGroup, RobotModel};
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};

const RES: f64 = 0.05;

fn arm() -> (RobotModel, PlanningGroup, Vec<f64>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("urdf/rgg_arm6.urdf");
    let robot = RobotModel::from_urdf_file(&path, None, &LoadOptions::default()).unwrap();
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    (robot, group, base)
}

fn empty_checker(robot: &RobotModel, group: &PlanningGroup, base: &[f64]) -> CpuChecker {
    CpuChecker::new(
        robot,
        group,
        base,
        &Scene::default(),
        CheckerOptions::default(),
    )
    .unwrap()
}

fn options() -> DynamicRoadmapOptions {
    DynamicRoadmapOptions {
        resolution: RES,
        drm_cell_size: Some(0.1),
        drm_bounds: Some(([-1.6, -1.6, 0.0], [1.6, 1.6, 1.6])),
        ..DynamicRoadmapOptions::default()
    }
}

/// The arm's workspace.
const LO: [f64; 3] = [-1.3, -1.3, 0.0];
const HI: [f64; 3] = [1.3, 1.3, 1.6];

fn random_pose(rng: &mut ChaCha8Rng) -> Isometry3<f64> {
    common::random_pose(rng, LO, HI)
}

fn random_shape(rng: &mut ChaCha8Rng) -> Shape {
    common::random_shape(rng, 1.0)
}

#[derive(Default, Debug)]
struct Tally {
    valid_ok: usize,
    invalid_ok: usize,
    unknown: usize,
    wrong: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.valid_ok += o.valid_ok;
        self.invalid_ok += o.invalid_ok;
        self.unknown += o.unknown;
        self.wrong += o.wrong;
    }
}

fn tally(labels: &[EdgeLabel], truth: &[bool], t: &mut Tally) {
    for (l, &free) in labels.iter().zip(truth) {
        match (l, free) {
            (EdgeLabel::Valid, true) => t.valid_ok += 1,
            (EdgeLabel::Invalid, false) => t.invalid_ok += 1,
            (EdgeLabel::Unknown, _) => t.unknown += 1,
            _ => t.wrong += 1,
        }
    }
}

/// Tallies of both methods over `placements` random obstacle placements (seeded by `seed`):
/// after each update, every edge not in self-collision that either method labels Valid or
/// Invalid is checked exactly. An Unknown label cannot be wrong; an edge in self-collision is
/// Invalid in every scene and collides in every scene (checked once by the caller), and its
/// exact check is the costliest (near-contact motions are refined 64-fold).
fn conservative_run(dr: &mut DynamicRoadmap, placements: usize, seed: u64) -> (Tally, Tally) {
    let (robot, group, base) = arm();
    let mut scene = Scene::default();
    let mut checker =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut drm, mut rgg) = (Tally::default(), Tally::default());
    for i in 0..placements {
        let o = Obstacle {
            id: "o".into(),
            shape: random_shape(&mut rng),
            pose: random_pose(&mut rng),
        };
        // Alternate between a new shape (replace) and a move of the current one.
        if i % 3 == 0 || scene.is_empty() {
            scene.upsert(o).unwrap();
        } else {
            scene.set_pose("o", o.pose).unwrap();
        }
        dr.update(&scene).unwrap();
        checker.sync_scene(&scene);
        let ld = dr.labels(LabelMethod::Drm).unwrap();
        let lr = dr.labels(LabelMethod::Rgg).unwrap();
        let decided: Vec<usize> = (0..ld.len())
            .filter(|&e| !dr.self_collision(e))
            .filter(|&e| ld[e] != EdgeLabel::Unknown || lr[e] != EdgeLabel::Unknown)
            .collect();
        for e in (0..ld.len()).filter(|&e| dr.self_collision(e)) {
            assert_eq!((ld[e], lr[e]), (EdgeLabel::Invalid, EdgeLabel::Invalid));
        }
        let r = dr.roadmap();
        let mut motions = MotionBatch::new(r.dof());
        for &e in &decided {
            let x = &r.edges()[e];
            motions
                .push(r.vertex(x.a).unwrap(), r.vertex(x.b).unwrap())
                .unwrap();
        }
        let truth = checker.check_motions(&motions, RES).unwrap();
        let pick = |l: &[EdgeLabel]| decided.iter().map(|&e| l[e]).collect::<Vec<_>>();
        tally(&pick(&ld), &truth, &mut drm);
        tally(&pick(&lr), &truth, &mut rgg);
        let both_unknown = (0..ld.len())
            .filter(|&e| !dr.self_collision(e) && ld[e] == EdgeLabel::Unknown)
            .filter(|&e| lr[e] == EdgeLabel::Unknown)
            .count();
        drm.unknown += both_unknown;
        rgg.unknown += both_unknown;
    }
    (drm, rgg)
}

#[test]
fn labels_are_conservative_on_thousands_of_random_placements() {
    let (robot, group, base) = arm();
    let dr = DynamicRoadmap::sample(&robot, &group, &base, 24, 4, 3, options()).unwrap();
    assert!(
        dr.roadmap().num_edges() >= 40,
        "{}",
        dr.roadmap().num_edges()
    );
    // The edges in self-collision (Invalid by the exact build-time check) collide.
    let r = dr.roadmap();
    let mut motions = MotionBatch::new(r.dof());
    let selfc: Vec<usize> = (0..r.num_edges())
        .filter(|&e| dr.self_collision(e))
        .collect();
    for &e in &selfc {
        let x = &r.edges()[e];
        motions
            .push(r.vertex(x.a).unwrap(), r.vertex(x.b).unwrap())
            .unwrap();
    }
    let free = empty_checker(&robot, &group, &base)
        .check_motions(&motions, RES)
        .unwrap();
    assert!(
        free.iter().all(|&f| !f),
        "an edge in self-collision is free"
    );
    assert!(
        selfc.len() < r.num_edges() / 2,
        "{} of {}",
        selfc.len(),
        r.num_edges()
    );
    // 2000 placements on two workers, each with its own copy of the roadmap and checker.
    let parts: Vec<(Tally, Tally)> = std::thread::scope(|sc| {
        let handles: Vec<_> = [11u64, 12]
            .into_iter()
            .map(|seed| {
                let mut copy = dr.clone();
                sc.spawn(move || conservative_run(&mut copy, 1000, seed))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut drm, mut rgg) = (Tally::default(), Tally::default());
    for (d, r) in parts {
        drm.add(&d);
        rgg.add(&r);
    }
    eprintln!("DRM {drm:?}\nRGG {rgg:?}");
    assert_eq!(drm.wrong, 0, "DRM mislabelled edges: {drm:?}");
    assert_eq!(rgg.wrong, 0, "RGG mislabelled edges: {rgg:?}");
    // The tests are not vacuous: both methods label most free edges, RGG finds collisions.
    assert!(rgg.invalid_ok > 0 && rgg.valid_ok > 0 && drm.valid_ok > 0);
    assert!(rgg.unknown > 0 && drm.unknown > 0);
    assert!(rgg.valid_ok >= drm.valid_ok / 2);
}

/// One random scene change: add an obstacle (at most five), move one or remove one.
fn random_scene_step(rng: &mut ChaCha8Rng, scene: &mut Scene, ids: &mut Vec<String>, step: usize) {
    let op = if ids.is_empty() {
        0
    } else {
        rng.random_range(0..4)
    };
    match op {
        0 | 3 if ids.len() < 5 => {
            let id = format!("o{step}");
            scene
                .add(Obstacle {
                    id: id.clone(),
                    shape: random_shape(rng),
                    pose: random_pose(rng),
                })
                .unwrap();
            ids.push(id);
        }
        1 | 3 => {
            let id = &ids[rng.random_range(0..ids.len())];
            scene.set_pose(id, random_pose(rng)).unwrap();
        }
        _ => {
            let k = rng.random_range(0..ids.len());
            scene.remove(&ids.remove(k)).unwrap();
        }
    }
}

/// Label vectors of both methods.
fn snapshot(dr: &DynamicRoadmap) -> (Vec<EdgeLabel>, Vec<EdgeLabel>) {
    (
        dr.labels(LabelMethod::Drm).unwrap(),
        dr.labels(LabelMethod::Rgg).unwrap(),
    )
}

#[test]
fn incremental_add_move_remove_match_a_rebuild() {
    let (robot, group, base) = arm();
    let fresh = DynamicRoadmap::sample(&robot, &group, &base, 30, 5, 5, options()).unwrap();
    let empty = snapshot(&fresh);
    let mut dr = fresh.clone();
    let mut scene = Scene::default();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut ids: Vec<String> = Vec::new();
    for step in 0..60 {
        random_scene_step(&mut rng, &mut scene, &mut ids, step);
        let stats = dr.update(&scene).unwrap();
        assert!(!stats.full_resync || step == 0);
        assert!(stats.slots <= 1 || step == 0, "{stats:?}");
        // From scratch: a fresh copy fed the whole scene at once.
        let mut rebuilt = fresh.clone();
        let mut copy = Scene::default();
        for o in scene.iter() {
            copy.add(o.clone()).unwrap();
        }
        rebuilt.update(&copy).unwrap();
        assert_eq!(snapshot(&dr), snapshot(&rebuilt), "step {step}");
    }
    for id in ids {
        scene.remove(&id).unwrap();
    }
    dr.update(&scene).unwrap();
    assert_eq!(
        snapshot(&dr),
        empty,
        "removing everything restores the empty labels"
    );
    let counts = dr.label_counts(LabelMethod::Rgg).unwrap();
    assert_eq!(counts.unknown, 0);
}

#[test]
fn bvh_verdicts_and_updates_equal_the_brute_force_ones() {
    let (robot, group, base) = arm();
    // Three workers, so that the pairs are split over several BVHs.
    let opts = DynamicRoadmapOptions {
        drm_cell_size: None,
        threads: 3,
        ..options()
    };
    let mut bvh = DynamicRoadmap::sample(&robot, &group, &base, 150, 6, 21, opts).unwrap();
    assert_eq!(bvh.rgg_engine(), RggEngine::Bvh);
    let mut brute = bvh.clone();
    brute.set_rgg_engine(RggEngine::BruteForce).unwrap();
    // Straight verdicts of many single obstacles.
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let (mut listed, mut invalid) = (0, 0);
    for i in 0..1500 {
        let o = Obstacle {
            id: "o".into(),
            shape: random_shape(&mut rng),
            pose: random_pose(&mut rng),
        };
        let fast = bvh.rgg_verdicts(&o, RggEngine::Bvh).unwrap();
        let reference = bvh.rgg_verdicts(&o, RggEngine::BruteForce).unwrap();
        assert_eq!(fast, reference, "placement {i}: {o:?}");
        listed += fast.len();
        invalid += fast
            .iter()
            .filter(|(_, l)| *l == EdgeLabel::Invalid)
            .count();
    }
    let edges = bvh.roadmap().num_edges();
    eprintln!(
        "{edges} edges; per placement {} listed, {} invalid",
        listed / 1500,
        invalid / 1500
    );
    assert!(invalid > 0 && listed > invalid && listed < 1500 * edges / 2);
    // Updates through adds, moves and removals keep the labels equal.
    let mut scene = Scene::default();
    let mut ids = Vec::new();
    for step in 0..60 {
        random_scene_step(&mut rng, &mut scene, &mut ids, step);
        let a = bvh.update(&scene).unwrap();
        let b = brute.update(&scene).unwrap();
        assert_eq!(
            bvh.labels(LabelMethod::Rgg),
            brute.labels(LabelMethod::Rgg),
            "step {step}"
        );
        assert_eq!(bvh.export_labels(), brute.export_labels(), "step {step}");
        assert_eq!((a.rgg_listed, a.relabelled), (b.rgg_listed, b.relabelled));
        assert!(a.rgg_candidates <= b.rgg_candidates);
    }
}

fn path_is_free(checker: &dyn Checker, configs: &[Vec<f64>]) -> bool {
    let mut m = MotionBatch::new(configs[0].len());
    for w in configs.windows(2) {
        m.push(&w[0], &w[1]).unwrap();
    }
    checker.check_motions(&m, RES).unwrap().iter().all(|&v| v)
}

#[test]
fn an_obstacle_moved_across_the_path_is_avoided_and_moving_it_away_restores_the_path() {
    let (robot, group, base) = arm();
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 200, 8, 1, options()).unwrap();
    let start = vec![0.0, -0.3, 0.0, 0.0, 0.0, 0.0];
    let goal = vec![1.6, -0.3, 0.0, 0.0, 0.0, 0.0];
    let mut scene = Scene::default();
    let far = Isometry3::translation(-1.3, -1.3, 0.2);
    scene
        .add(Obstacle {
            id: "block".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.15, 0.15, 0.3),
            },
            pose: far,
        })
        .unwrap();
    let mut checker =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    dr.update(&scene).unwrap();
    let short = dr.search(&checker, &start, &goal).unwrap();
    assert!(path_is_free(&checker, &short.configs));

    // Across the sweep of the straight yaw motion (the arm at shoulder height, tilted up by
    // 0.3 rad, sweeping from +x towards +y).
    let across = Isometry3::translation(0.55, 0.55, 1.0);
    scene.set_pose("block", across).unwrap();
    let stats = dr.update(&scene).unwrap();
    assert_eq!(stats.slots, 1);
    checker.sync_scene(&scene);
    assert!(
        !path_is_free(&checker, &short.configs),
        "the obstacle blocks the old path"
    );
    let around = dr.search(&checker, &start, &goal).unwrap();
    assert!(path_is_free(&checker, &around.configs));
    assert!(around.cost > short.cost + 1e-9);
    // The full planning frame (shortcut, timing, re-validation) also works.
    let mut req = PlanRequest::new(start.clone(), goal.clone(), PlannerId::LazyPrm);
    req.resolution = RES;
    let res = dr.plan(&checker, &req).unwrap();
    assert!(path_is_free(&checker, &res.path));

    scene.set_pose("block", far).unwrap();
    dr.update(&scene).unwrap();
    checker.sync_scene(&scene);
    let back = dr.search(&checker, &start, &goal).unwrap();
    assert!(
        (back.cost - short.cost).abs() < 1e-9,
        "{} vs {}",
        back.cost,
        short.cost
    );
    assert_eq!(back.configs, short.configs);
}

#[test]
fn lazy_validation_results_survive_unrelated_moves_and_drop_for_nearby_ones() {
    let (robot, group, base) = arm();
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 200, 8, 1, options()).unwrap();
    let start = vec![0.0, -0.3, 0.0, 0.0, 0.0, 0.0];
    let goal = vec![1.6, -0.3, 0.0, 0.0, 0.0, 0.0];
    let block = Obstacle {
        id: "block".into(),
        shape: Shape::Box {
            half_extents: Vector3::new(0.15, 0.15, 0.3),
        },
        pose: Isometry3::translation(0.55, 0.55, 1.0),
    };
    let mut scene = Scene::default();
    scene.add(block.clone()).unwrap();
    dr.update(&scene).unwrap();
    let checker =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    dr.search(&checker, &start, &goal).unwrap();
    // Edges whose label came from lazy validation differ from the method's label.
    let method = dr.plan_method();
    let effective = |dr: &DynamicRoadmap| -> Vec<EdgeLabel> {
        dr.export_labels().iter().map(|x| x.2).collect()
    };
    let labels = effective(&dr);
    let validated: Vec<usize> = (0..labels.len())
        .filter(|&e| dr.method_label(method, e) != Some(labels[e]))
        .collect();
    assert!(
        !validated.is_empty(),
        "the search validated no Unknown edge"
    );

    // An obstacle outside the voxel grid and far from every sweep: nothing is dropped.
    let far = Obstacle {
        id: "far".into(),
        shape: Shape::Sphere { radius: 0.05 },
        pose: Isometry3::translation(3.0, 3.0, 3.0),
    };
    assert!(dr.rgg_verdicts(&far, RggEngine::Bvh).unwrap().is_empty());
    scene.add(far).unwrap();
    dr.update(&scene).unwrap();
    assert_eq!(effective(&dr), labels);

    // The block moved by a millimetre: every validated edge it may touch (old or new pose)
    // falls back to the method's label; the others keep theirs.
    let mut moved = block.clone();
    moved.pose = Isometry3::translation(0.551, 0.55, 1.0);
    let near: std::collections::HashSet<usize> = dr
        .rgg_verdicts(&block, RggEngine::Bvh)
        .unwrap()
        .into_iter()
        .chain(dr.rgg_verdicts(&moved, RggEngine::Bvh).unwrap())
        .map(|x| x.0)
        .collect();
    assert!(validated.iter().any(|e| near.contains(e)));
    scene.set_pose("block", moved.pose).unwrap();
    dr.update(&scene).unwrap();
    let after = effective(&dr);
    for &e in &validated {
        if near.contains(&e) {
            assert_eq!(Some(after[e]), dr.method_label(method, e), "edge {e}");
        }
    }
}

#[test]
fn relabelling_split_over_threads_gives_the_single_thread_labels() {
    let (robot, group, base) = arm();
    // Shares of 64 edges over up to 4 threads, against one thread; both DRM and RGG built.
    let split = DynamicRoadmapOptions {
        threads: 4,
        relabel_edges_per_worker: 64,
        ..options()
    };
    let single = DynamicRoadmapOptions {
        threads: 1,
        ..options()
    };
    let mut a = DynamicRoadmap::sample(&robot, &group, &base, 120, 8, 5, split).unwrap();
    let mut b = DynamicRoadmap::sample(&robot, &group, &base, 120, 8, 5, single).unwrap();
    assert!(
        a.roadmap().num_edges() >= 4 * 64,
        "{}",
        a.roadmap().num_edges()
    );
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut scene = Scene::default();
    let mut ids = Vec::new();
    for step in 0..30 {
        random_scene_step(&mut rng, &mut scene, &mut ids, step);
        let (sa, sb) = (a.update(&scene).unwrap(), b.update(&scene).unwrap());
        assert_eq!(sa.relabelled, sb.relabelled, "step {step}");
        assert_eq!(a.export_labels(), b.export_labels(), "step {step}");
        assert_eq!(snapshot(&a), snapshot(&b), "step {step}");
    }
    let bad = DynamicRoadmapOptions {
        relabel_edges_per_worker: 0,
        ..options()
    };
    assert!(DynamicRoadmap::sample(&robot, &group, &base, 20, 4, 5, bad).is_err());
}

#[test]
fn labels_and_paths_are_deterministic() {
    let (robot, group, base) = arm();
    let run = || {
        let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 60, 6, 9, options()).unwrap();
        let mut scene = Scene::default();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        scene
            .add(Obstacle {
                id: "a".into(),
                shape: random_shape(&mut rng),
                pose: random_pose(&mut rng),
            })
            .unwrap();
        dr.update(&scene).unwrap();
        scene.set_pose("a", random_pose(&mut rng)).unwrap();
        dr.update(&scene).unwrap();
        let checker =
            CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
        let r = dr.roadmap();
        let (s, g) = (
            r.vertex(0).unwrap().to_vec(),
            r.vertex(59).unwrap().to_vec(),
        );
        let path = dr.search(&checker, &s, &g).ok().map(|p| p.configs);
        (snapshot(&dr), dr.export_labels(), path)
    };
    assert_eq!(run(), run());
}

#[test]
fn bad_options_and_mismatched_checkers_are_errors() {
    let (robot, group, base) = arm();
    let mut o = options();
    o.resolution = f64::NAN;
    assert!(DynamicRoadmap::sample(&robot, &group, &base, 10, 3, 1, o).is_err());
    let mut o = options();
    o.drm_cell_size = None;
    o.rgg = false;
    assert!(DynamicRoadmap::sample(&robot, &group, &base, 10, 3, 1, o).is_err());
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 10, 3, 1, options()).unwrap();
    let checker = empty_checker(&robot, &group, &base);
    assert!(dr.search(&checker, &[0.0; 5], &[0.0; 6]).is_err());
    assert!(dr.search(&checker, &[9.0; 6], &[0.0; 6]).is_err());
}

#[test]
fn the_gpu_option_falls_back_to_the_cpu_without_a_gpu() {
    if gpu_motion_planner::gpu::gpu_available() {
        eprintln!("SKIP the_gpu_option_falls_back_to_the_cpu_without_a_gpu: a GPU is present");
        return;
    }
    let (robot, group, base) = arm();
    let cpu = DynamicRoadmap::sample(&robot, &group, &base, 12, 3, 1, options()).unwrap();
    let o = DynamicRoadmapOptions {
        gpu: true,
        ..options()
    };
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 12, 3, 1, o).unwrap();
    assert_eq!(dr.rgg_engine(), RggEngine::Bvh);
    assert_eq!(snapshot(&dr), snapshot(&cpu));
    let err = dr.set_rgg_engine(RggEngine::Cuda).unwrap_err();
    assert!(err.to_string().contains("no CUDA device"), "{err}");
    assert_eq!(dr.rgg_engine(), RggEngine::Bvh);
    let ob = Obstacle {
        id: "o".into(),
        shape: Shape::Sphere { radius: 0.2 },
        pose: Isometry3::translation(0.5, 0.0, 0.8),
    };
    assert!(dr.rgg_verdicts(&ob, RggEngine::Cuda).is_err());
}

/// An obstacle some links may touch (allowed collisions): its RGG "in collision" verdicts
/// become "unknown" (the query's checker decides those edges), its voxel (DRM) verdicts stay,
/// and the edges it leaves free are the same. Other obstacles are unaffected.
#[test]
fn obstacles_that_may_be_touched_leave_their_hits_unknown() {
    let (robot, group, base) = arm();
    let fresh = DynamicRoadmap::sample(&robot, &group, &base, 40, 5, 7, options()).unwrap();
    let mut scene = Scene::default();
    scene
        .add(Obstacle {
            id: "block".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.3, 0.3, 0.3),
            },
            pose: Isometry3::translation(0.5, 0.0, 0.6),
        })
        .unwrap();
    let mut strict = fresh.clone();
    strict.update(&scene).unwrap();
    let mut lenient = fresh.clone();
    lenient.update_with(&scene, &|o| o.id == "block").unwrap();
    let mut other = fresh.clone();
    other.update_with(&scene, &|o| o.id == "elsewhere").unwrap();
    let (drm_strict, rgg_strict) = snapshot(&strict);
    let (drm_lenient, rgg_lenient) = snapshot(&lenient);
    // Edges in self-collision are invalid whatever the obstacles.
    let (_, rgg_empty) = snapshot(&fresh);
    let hit = |e: usize| rgg_strict[e] == EdgeLabel::Invalid && rgg_empty[e] != EdgeLabel::Invalid;
    let hits = (0..rgg_strict.len()).filter(|&e| hit(e)).count();
    assert!(hits > 0, "the block must hit some edges for this test");
    for (e, (a, b)) in rgg_strict.iter().zip(&rgg_lenient).enumerate() {
        let want = if hit(e) { EdgeLabel::Unknown } else { *a };
        assert_eq!(*b, want, "edge {e}");
    }
    assert_eq!(drm_strict, drm_lenient, "voxel verdicts stay conservative");
    assert_eq!(snapshot(&other), snapshot(&strict));
}

#[test]
fn a_goal_set_is_planned_goal_by_goal_past_goals_in_collision() {
    let (robot, group, base) = arm();
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 200, 8, 1, options()).unwrap();
    let start = vec![0.0, -0.3, 0.0, 0.0, 0.0, 0.0];
    let free_goal = vec![-1.6, -0.3, 0.0, 0.0, 0.0, 0.0];
    let mut scene = Scene::default();
    scene
        .add(Obstacle {
            id: "block".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.15, 0.15, 0.3),
            },
            pose: Isometry3::translation(0.55, 0.55, 1.0),
        })
        .unwrap();
    let checker =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    dr.update(&scene).unwrap();
    // A goal the block collides with: the arm turned towards it.
    let turned: Vec<Vec<f64>> = (0..=32)
        .map(|k| vec![k as f64 * 0.05, -0.3, 0.0, 0.0, 0.0, 0.0])
        .collect();
    let rows: Vec<&Vec<f64>> = turned.iter().collect();
    let verdicts = checker
        .check_configs(&ConfigBatch::from_rows(6, &rows).unwrap())
        .unwrap();
    let hit = turned[verdicts
        .iter()
        .position(|&v| !v)
        .expect("a turn into the block")]
    .clone();
    assert!(
        verdicts[0]
            && checker
                .check_configs(&ConfigBatch::from_rows(6, &[&free_goal]).unwrap())
                .unwrap()[0]
    );

    let mut req = PlanRequest::new(start.clone(), hit.clone(), PlannerId::LazyPrm);
    req.resolution = RES;
    req.other_goals = vec![free_goal.clone()];
    let res = dr.plan(&checker, &req).unwrap();
    assert_eq!(res.reached_goal, 1);
    assert_eq!(res.path.last(), Some(&free_goal));
    assert!(path_is_free(&checker, &res.path));

    // Only goals in collision: the goal is refused as such; one outside the limits is named.
    req.other_goals = vec![hit.clone()];
    assert!(
        matches!(dr.plan(&checker, &req), Err(PlanError::InvalidGoal(m)) if m.contains("collision"))
    );
    req.other_goals = vec![free_goal.clone(), vec![9.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
    assert!(
        matches!(dr.plan(&checker, &req), Err(PlanError::InvalidGoal(m)) if m.contains("other_goals[1]"))
    );
}
