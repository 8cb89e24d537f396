//! The dynamic roadmap (DRM and RGG labels): conservative labels against the exact checker
//! on random obstacle placements, incremental updates equal to a rebuild, replanning around
//! a moved obstacle, determinism.

use std::f64::consts::PI;
use std::path::Path;

use nalgebra::{Isometry3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gpu_motion_planner::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use gpu_motion_planner::planners::dynamic_roadmap::{
    DynamicRoadmap, DynamicRoadmapOptions, LabelMethod,
};
use gpu_motion_planner::planners::{PlanRequest, PlannerId};
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

fn options() -> DynamicRoadmapOptions {
    DynamicRoadmapOptions {
        resolution: RES,
        drm_cell_size: Some(0.1),
        drm_bounds: Some(([-1.6, -1.6, 0.0], [1.6, 1.6, 1.6])),
        ..DynamicRoadmapOptions::default()
    }
}

fn random_pose(rng: &mut ChaCha8Rng) -> Isometry3<f64> {
    let t = Vector3::new(
        rng.random_range(-1.3..1.3),
        rng.random_range(-1.3..1.3),
        rng.random_range(0.0..1.6),
    );
    let q = UnitQuaternion::from_euler_angles(
        rng.random_range(-PI..PI),
        rng.random_range(-PI..PI),
        rng.random_range(-PI..PI),
    );
    Isometry3::from_parts(t.into(), q)
}

fn random_shape(rng: &mut ChaCha8Rng) -> Shape {
    match rng.random_range(0..6) {
        0 => Shape::Sphere {
            radius: rng.random_range(0.05..0.3),
        },
        1 => Shape::Cylinder {
            radius: rng.random_range(0.03..0.2),
            half_length: rng.random_range(0.05..0.4),
        },
        _ => Shape::Box {
            half_extents: Vector3::new(
                rng.random_range(0.03..0.35),
                rng.random_range(0.03..0.35),
                rng.random_range(0.03..0.35),
            ),
        },
    }
}

fn all_motions(dr: &DynamicRoadmap) -> MotionBatch {
    let r = dr.roadmap();
    let mut m = MotionBatch::new(r.dof());
    for e in r.edges() {
        m.push(r.vertex(e.a).unwrap(), r.vertex(e.b).unwrap())
            .unwrap();
    }
    m
}

#[derive(Default, Debug)]
struct Tally {
    valid_ok: usize,
    invalid_ok: usize,
    unknown: usize,
    wrong: usize,
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

#[test]
fn labels_are_conservative_on_thousands_of_random_placements() {
    let (robot, group, base) = arm();
    let mut dr = DynamicRoadmap::sample(&robot, &group, &base, 24, 4, 3, options()).unwrap();
    assert!(
        dr.roadmap().num_edges() >= 40,
        "{}",
        dr.roadmap().num_edges()
    );
    let motions = all_motions(&dr);
    let mut scene = Scene::default();
    let mut checker =
        CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut drm, mut rgg) = (Tally::default(), Tally::default());
    for i in 0..2000 {
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
        let truth = checker.check_motions(&motions, RES).unwrap();
        tally(&dr.labels(LabelMethod::Drm).unwrap(), &truth, &mut drm);
        tally(&dr.labels(LabelMethod::Rgg).unwrap(), &truth, &mut rgg);
    }
    eprintln!("DRM {drm:?}\nRGG {rgg:?}");
    assert_eq!(drm.wrong, 0, "DRM mislabelled edges: {drm:?}");
    assert_eq!(rgg.wrong, 0, "RGG mislabelled edges: {rgg:?}");
    // The tests are not vacuous: both methods label most free edges, RGG finds collisions.
    assert!(rgg.invalid_ok > 0 && rgg.valid_ok > 0 && drm.valid_ok > 0);
    assert!(rgg.unknown > 0 && drm.unknown > 0);
    assert!(rgg.valid_ok >= drm.valid_ok / 2);
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
                        shape: random_shape(&mut rng),
                        pose: random_pose(&mut rng),
                    })
                    .unwrap();
                ids.push(id);
            }
            1 | 3 => {
                let id = &ids[rng.random_range(0..ids.len())];
                scene.set_pose(id, random_pose(&mut rng)).unwrap();
            }
            _ => {
                let k = rng.random_range(0..ids.len());
                scene.remove(&ids.remove(k)).unwrap();
            }
        }
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
    let checker = CpuChecker::new(
        &robot,
        &group,
        &base,
        &Scene::default(),
        CheckerOptions::default(),
    )
    .unwrap();
    assert!(dr.search(&checker, &[0.0; 5], &[0.0; 6]).is_err());
    assert!(dr.search(&checker, &[9.0; 6], &[0.0; 6]).is_err());
}
