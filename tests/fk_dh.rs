//! Forward kinematics and DH parameters against hand-computed poses.

mod common;

use gpu_motion_planner::robot::dh::DhChain;
use gpu_motion_planner::robot::{LoadOptions, RobotError, RobotModel};
use nalgebra::{Point3, Vector3};
use rand::{Rng, SeedableRng};

fn arm3() -> RobotModel {
    RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &LoadOptions::default(),
    )
    .expect("test_arm3 loads")
}

/// Tool position of test_arm3 by hand: p = Rz(q1) * (0.4 cos q2 + 0.3 cos(q2+q3), 0,
/// 0.4 - 0.4 sin q2 - 0.3 sin(q2+q3)).
fn tool_by_hand(q: [f64; 3]) -> Vector3<f64> {
    let r = 0.4 * q[1].cos() + 0.3 * (q[1] + q[2]).cos();
    let z = 0.4 - 0.4 * q[1].sin() - 0.3 * (q[1] + q[2]).sin();
    Vector3::new(r * q[0].cos(), r * q[0].sin(), z)
}

#[test]
fn fk_matches_hand_computation() {
    let robot = arm3();
    let tree = &robot.tree;
    assert_eq!(
        tree.variable_names,
        vec!["joint1", "joint2", "joint3", "finger_joint"]
    );
    let tool = tree.link("tool").unwrap();
    let link2 = tree.link("link2").unwrap();
    for q in [
        [0.0, 0.0, 0.0],
        [0.5, 0.0, 0.0],
        [0.0, 0.7, 0.0],
        [0.3, -0.4, 1.1],
        [-2.0, 1.5, -2.2],
    ] {
        let poses = tree.forward_kinematics(&[q[0], q[1], q[2], 0.0]);
        let p = poses[tool].translation.vector;
        assert!(
            (p - tool_by_hand(q)).norm() < 1e-12,
            "q = {q:?}: {p:?} vs {:?}",
            tool_by_hand(q)
        );
        // link2 sits at height 0.4 on the z axis whatever the angles.
        assert!((poses[link2].translation.vector - Vector3::new(0.0, 0.0, 0.4)).norm() < 1e-12);
        // The tool's x axis points along the arm's direction in the vertical plane.
        let x = poses[tool].rotation * Vector3::x();
        let a = q[1] + q[2];
        let expect = Vector3::new(a.cos() * q[0].cos(), a.cos() * q[0].sin(), -a.sin());
        assert!((x - expect).norm() < 1e-12);
    }
}

#[test]
fn mimic_and_prismatic_joints_follow() {
    let robot = arm3();
    let tree = &robot.tree;
    let left = tree.link("finger_left").unwrap();
    let right = tree.link("finger_right").unwrap();
    let tool = tree.link("tool").unwrap();
    let poses = tree.forward_kinematics(&[0.0, 0.0, 0.0, 0.03]);
    let t = poses[tool].translation.vector;
    assert!((poses[left].translation.vector - t - Vector3::new(0.0, 0.05, 0.0)).norm() < 1e-12);
    assert!((poses[right].translation.vector - t - Vector3::new(0.0, -0.05, 0.0)).norm() < 1e-12);
}

#[test]
fn batch_fk_equals_single_fk() {
    let robot = arm3();
    let tree = &robot.tree;
    let states = [0.1, 0.2, 0.3, 0.01, -0.4, 0.5, -0.6, 0.02];
    let batch = tree.forward_kinematics_batch(&states);
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[1], tree.forward_kinematics(&states[4..]));
}

fn check_dh_agrees(robot: &RobotModel, base: &str, tip: &str, seed: u64) {
    let tree = &robot.tree;
    let chain =
        DhChain::from_tree(tree, base, tip).unwrap_or_else(|e| panic!("{base}->{tip}: {e}"));
    let b = tree.link(base).unwrap();
    let t = tree.link(tip).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let row_joints: Vec<usize> = chain
        .rows
        .iter()
        .map(|r| tree.joint(&r.joint).unwrap())
        .collect();
    for _ in 0..200 {
        let mut state = tree.neutral_state();
        let mut q = Vec::new();
        for &j in &row_joints {
            let l = tree.joints[j].limits;
            let v = rng.random_range(l.lower..=l.upper);
            state[tree.joints[j].variable.unwrap()] = v;
            q.push(v);
        }
        let poses = tree.forward_kinematics(&state);
        let urdf = poses[b].inverse() * poses[t];
        let dh = chain.forward(&q);
        let dp = (urdf.translation.vector - dh.translation.vector).norm();
        let dr = urdf.rotation.angle_to(&dh.rotation);
        assert!(
            dp < 1e-9 && dr < 1e-9,
            "{base}->{tip}: DH and URDF FK differ by {dp} m / {dr} rad at {q:?}"
        );
    }
}

#[test]
fn dh_table_of_test_arm_is_as_computed_by_hand() {
    let robot = arm3();
    let chain = DhChain::from_tree(&robot.tree, "base", "tool").unwrap();
    assert_eq!(chain.rows.len(), 3);
    // joint1 (z) then joint2 (y) intersect at height 0.4: d1 = 0.4 - 0.1 (frame 0 sits on the
    // base z axis at the base origin's foot), a1 = 0, |alpha1| = pi/2.
    let r = &chain.rows;
    assert!(
        (r[0].d.abs() - 0.4).abs() < 1e-12 || (r[0].d.abs() - 0.3).abs() < 1e-12,
        "d1 = {}",
        r[0].d
    );
    assert!(r[0].a.abs() < 1e-12, "a1 = {}", r[0].a);
    assert!(
        (r[0].alpha.abs() - std::f64::consts::FRAC_PI_2).abs() < 1e-12,
        "alpha1 = {}",
        r[0].alpha
    );
    // joint2 and joint3 are parallel y axes 0.4 apart: a2 = 0.4, alpha2 = 0.
    assert!((r[1].a.abs() - 0.4).abs() < 1e-12, "a2 = {}", r[1].a);
    assert!(r[1].alpha.abs() < 1e-12, "alpha2 = {}", r[1].alpha);
    check_dh_agrees(&robot, "base", "tool", 1);
}

#[test]
fn dh_agrees_with_urdf_on_bundled_and_mbm_robots() {
    let root = common::root();
    let opts = LoadOptions {
        skip_geometry: true,
        ..Default::default()
    };
    let arm = RobotModel::from_urdf_file(&root.join("urdf/gmp_arm.urdf"), None, &opts).unwrap();
    check_dh_agrees(&arm, "base_link", "tool0", 2);
    let Some(data) = common::mbm_or_skip("dh_agrees_with_urdf_on_bundled_and_mbm_robots") else {
        return;
    };
    for (robot, base, tip) in [
        ("panda", "panda_link0", "panda_hand"),
        ("ur5", "base_link", "ee_link"),
        ("fetch", "base_link", "gripper_link"),
    ] {
        let m = RobotModel::from_urdf_file(
            &data.join(robot).join(format!("{robot}.urdf")),
            None,
            &opts,
        )
        .unwrap();
        check_dh_agrees(&m, base, tip, 3);
    }
}

#[test]
fn dh_refuses_a_chain_through_a_mimic_joint() {
    let robot = arm3();
    let e = DhChain::from_tree(&robot.tree, "base", "finger_right").unwrap_err();
    match e {
        RobotError::NotDh { joint, .. } => assert_eq!(joint, "finger_mimic_joint"),
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn collision_geometry_contains_the_primitives() {
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    // link1 is a cylinder r=0.05, length 0.3 at z=0.15: points on its surface are inside the
    // polytope (which circumscribes it).
    let l1 = robot.tree.link("link1").unwrap();
    let body = robot.bodies.iter().find(|b| b.link == l1).unwrap();
    for k in 0..32 {
        let a = k as f64 * std::f64::consts::TAU / 32.0;
        for z in [0.0, 0.15, 0.3] {
            let p = Point3::new(0.05 * a.cos(), 0.05 * a.sin(), z);
            assert!(
                body.polytope.contains_point(&p, 1e-9),
                "{p:?} outside the link1 polytope"
            );
        }
    }
}
