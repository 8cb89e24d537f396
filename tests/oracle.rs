//! The polytope checker and the fitted sphere model against an exact oracle: parry3d
//! triangle-mesh queries on the original meshes. No configuration that the oracle finds in
//! collision may be reported free.

mod common;

use common::exact::ExactRobot;
use gpu_motion_planner::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, RobotShapes,
};
use gpu_motion_planner::robot::spherize::{fit_robot, SphereFit};
use gpu_motion_planner::robot::RobotModel;
use gpu_motion_planner::scene::{Obstacle, Scene, Shape};
use nalgebra::{Isometry3, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn run_oracle(
    robot: &RobotModel,
    shapes: RobotShapes,
    group_name: &str,
    seed: u64,
    scenes: usize,
    configs_per_scene: usize,
) -> (usize, usize, usize) {
    let group = robot.group(group_name).unwrap();
    let exact = ExactRobot::new(robot);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut oracle_hits, mut ours_hits, mut total) = (0, 0, 0);
    for _ in 0..scenes {
        let scene = common::random_scene(&mut rng, 6);
        let obstacles = ExactRobot::scene(&scene);
        let base = robot.tree.neutral_state();
        let opts = CheckerOptions {
            shapes,
            ..Default::default()
        };
        let checker = CpuChecker::new(robot, &group, &base, &scene, opts).unwrap();
        let space = &group.space;
        let mut batch = ConfigBatch::new(space.dof());
        for _ in 0..configs_per_scene {
            let q: Vec<f64> = (0..space.dof())
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                .collect();
            batch.push(&q).unwrap();
        }
        let ours = checker.check_configs(&batch).unwrap();
        for (i, q) in batch.rows().enumerate() {
            let state = group.full_state(&base, q);
            let oracle = exact.collides(&obstacles, &state);
            total += 1;
            if let Some(pair) = oracle {
                oracle_hits += 1;
                assert!(!ours[i], "configuration {q:?}: {pair} collide under the exact meshes but the {shapes:?} checker says free");
            }
            if !ours[i] {
                ours_hits += 1;
            }
        }
    }
    (oracle_hits, ours_hits, total)
}

/// Loads a robot from its URDF and SRDF and runs [`run_oracle`] on it with its polytopes and
/// with a sphere model fitted to them; the random scenes must put more than `min_oracle`
/// configurations in collision for the run to mean anything.
#[allow(clippy::too_many_arguments)]
fn assert_conservative(
    urdf: &std::path::Path,
    srdf: &std::path::Path,
    group: &str,
    seed: u64,
    scenes: usize,
    configs_per_scene: usize,
    min_oracle: usize,
    fitted_has_free: bool,
) {
    let mut robot = RobotModel::from_urdf_file(urdf, Some(srdf), &Default::default()).unwrap();
    robot.spherized = Some(fit_robot(&robot, &SphereFit::default()));
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let (oracle, ours, total) =
            run_oracle(&robot, shapes, group, seed, scenes, configs_per_scene);
        eprintln!(
            "{} ({shapes:?}): oracle collisions {oracle}, ours {ours}, of {total}",
            urdf.display()
        );
        assert!(
            oracle > min_oracle,
            "the random scenes must produce collisions to make the test meaningful"
        );
        // Each oracle collision was also ours (asserted per configuration in run_oracle).
        assert!(ours >= oracle);
        // Some configurations must be free, or the model would pass by covering everything.
        // Not asked of the fitted spheres of robots whose links nearly touch (UR5: base_link
        // and upper_arm_link always, `results/spheres/`).
        if shapes == RobotShapes::Polytopes || fitted_has_free {
            assert!(ours < total, "{shapes:?}: {ours} of {total} in collision");
        }
    }
}

#[test]
fn polytope_checker_is_conservative_on_bundled_arm() {
    let root = common::root();
    assert_conservative(
        &root.join("urdf/gmp_arm.urdf"),
        &root.join("urdf/gmp_arm.srdf"),
        "arm",
        11,
        20,
        100,
        100,
        true,
    );
}

#[test]
fn polytope_checker_is_conservative_on_mbm_meshes() {
    let Some(data) = common::mbm_or_skip("polytope_checker_is_conservative_on_mbm_meshes") else {
        return;
    };
    for (name, group, seed, scenes, n, min_oracle, fitted_has_free) in [
        ("panda", "panda_arm", 12, 10, 100, 50, true),
        ("ur5", "manipulator", 13, 5, 60, 20, false),
        ("fetch", "arm_with_torso", 13, 5, 60, 20, false),
    ] {
        assert_conservative(
            &data.join(format!("{name}/{name}.urdf")),
            &data.join(format!("{name}/{name}.srdf")),
            group,
            seed,
            scenes,
            n,
            min_oracle,
            fitted_has_free,
        );
    }
}

#[test]
fn touching_and_separated_boxes_near_the_margin() {
    // A box obstacle placed exactly against link2 of test_arm3 is in collision; moved 1 mm away
    // it is free.
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &Default::default(),
    )
    .unwrap();
    let group = robot
        .group_from_joints(&["joint1", "joint2", "joint3"])
        .unwrap();
    // link2's box spans z in [0.37, 0.43] at q = 0; place a slab on top of it.
    for (gap, expect_free) in [(0.0, false), (-0.001, false), (0.001, true)] {
        let mut scene = Scene::new("world");
        let top = 0.43 + gap + 0.01;
        scene
            .add(Obstacle {
                id: "slab".into(),
                shape: Shape::Box {
                    half_extents: Vector3::new(0.05, 0.05, 0.01),
                },
                pose: Isometry3::translation(0.2, 0.0, top),
            })
            .unwrap();
        let checker = CpuChecker::new(
            &robot,
            &group,
            &robot.tree.neutral_state(),
            &scene,
            CheckerOptions::default(),
        )
        .unwrap();
        let v = checker.check_config(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(v, expect_free, "gap {gap}");
    }
}

#[test]
fn a_thin_pole_between_two_checked_configurations_is_found() {
    // Joint 1 of test_arm3 sweeps link3 (radius 0.4..0.7 from the z axis, height 0.4) from
    // 0.6 to 1.1 rad past a thin pole at 0.85 rad. At resolution 0.5 the motion has a single
    // segment: both checked configurations are far from the pole, so a discrete check would
    // call the motion free; the sweep bound must not.
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &Default::default(),
    )
    .unwrap();
    let group = robot
        .group_from_joints(&["joint1", "joint2", "joint3"])
        .unwrap();
    let mut scene = Scene::new("world");
    let a: f64 = 0.85;
    scene
        .add(Obstacle {
            id: "pole".into(),
            shape: Shape::Cylinder {
                radius: 0.005,
                half_length: 0.1,
            },
            pose: Isometry3::translation(0.55 * a.cos(), 0.55 * a.sin(), 0.4),
        })
        .unwrap();
    let checker = CpuChecker::new(
        &robot,
        &group,
        &robot.tree.neutral_state(),
        &scene,
        CheckerOptions::default(),
    )
    .unwrap();
    assert!(checker.check_config(&[0.6, 0.0, 0.0]).unwrap());
    assert!(checker.check_config(&[1.1, 0.0, 0.0]).unwrap());
    assert!(
        !checker.check_config(&[0.85, 0.0, 0.0]).unwrap(),
        "the pole is in link3's way"
    );
    let mut m = gpu_motion_planner::collision::MotionBatch::new(3);
    m.push(&[0.6, 0.0, 0.0], &[1.1, 0.0, 0.0]).unwrap();
    // Same joints, swept away from the pole: free, proven after refinement.
    m.push(&[-0.6, 0.0, 0.0], &[-1.1, 0.0, 0.0]).unwrap();
    assert_eq!(checker.check_motions(&m, 0.5).unwrap(), vec![false, true]);
}

/// The MBM Panda with its link meshes split into convex parts (`LoadOptions::mesh_parts`):
/// more bodies than meshes, and still no configuration the exact meshes put in collision is
/// reported free.
#[test]
fn split_link_meshes_stay_conservative_on_mbm_panda() {
    let Some(data) = common::mbm_or_skip("split_link_meshes_stay_conservative_on_mbm_panda") else {
        return;
    };
    let (urdf, srdf) = (data.join("panda/panda.urdf"), data.join("panda/panda.srdf"));
    let hull = RobotModel::from_urdf_file(&urdf, Some(&srdf), &Default::default()).unwrap();
    let opts = gpu_motion_planner::robot::LoadOptions {
        mesh_parts: Some(gpu_motion_planner::robot::decompose::Decomposition {
            max_parts: 8,
            ..Default::default()
        }),
        ..Default::default()
    };
    let split = RobotModel::from_urdf_file(&urdf, Some(&srdf), &opts).unwrap();
    assert!(
        split.bodies.len() > hull.bodies.len(),
        "{} bodies against {}",
        split.bodies.len(),
        hull.bodies.len()
    );
    assert_eq!(split.collision_links(), hull.collision_links());
    let (oracle, ours, total) =
        run_oracle(&split, RobotShapes::Polytopes, "panda_arm", 12, 10, 100);
    eprintln!("panda, split links: oracle collisions {oracle}, ours {ours}, of {total}");
    assert!(oracle > 50);
    assert!(ours >= oracle && ours < total);
}
