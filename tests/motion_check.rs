//! The CPU motion check against its reference. `CpuChecker::check_motions` looks for the first
//! refinement level whose swept check passes everywhere, stopping each level at its first
//! failing configuration and skipping the configurations that passed at the coarser level;
//! `CpuChecker::check_motions_reference` runs `refine_motions` over `motion_status`, the twin
//! of the GPU backends' motion check. Their verdicts must be identical, on motions of every
//! kind: free at once, free only after refinement, never free and colliding.

mod common;

use gpu_motion_planner::collision::{
    prepare_motions, Checker, CheckerOptions, CpuChecker, MotionBatch, MotionStatus, Scratch,
    MAX_REFINEMENTS,
};
use gpu_motion_planner::robot::RobotModel;
use gpu_motion_planner::scene::{Obstacle, Scene};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn lazy_refinement_gives_the_reference_verdicts() {
    let robot = RobotModel::from_urdf_file(
        &common::root().join("urdf/gmp_arm.urdf"),
        Some(&common::root().join("urdf/gmp_arm.srdf")),
        &Default::default(),
    )
    .expect("bundled arm loads");
    let group = robot.group("arm").expect("arm group");
    let space = &group.space;
    let dof = space.dof();
    let base = robot.tree.neutral_state();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // Motions by their first-level status and final verdict.
    let (mut total, mut refined_valid, mut refined_invalid, mut colliding, mut free) =
        (0, 0, 0, 0, 0);
    // Valid motions no longer valid with one refinement fewer.
    let mut dropped = 0;
    for s in 0..12 {
        let mut scene = Scene::new("world");
        for i in 0..6 {
            scene
                .add(Obstacle {
                    id: format!("o{s}_{i}"),
                    shape: common::random_shape(&mut rng, 0.5),
                    pose: common::random_pose(&mut rng, [-0.8, -0.8, 0.0], [0.8, 0.8, 1.2]),
                })
                .expect("obstacle added");
        }
        let checker = CpuChecker::new(
            &robot,
            &group,
            &base,
            &scene,
            CheckerOptions {
                threads: 1,
                ..Default::default()
            },
        )
        .expect("checker builds");
        for resolution in [0.02, 0.1, 0.5] {
            let mut motions = MotionBatch::new(dof);
            for _ in 0..120 {
                let from: Vec<f64> = (0..dof)
                    .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                    .collect();
                let len = rng.random_range(0.05..2.0);
                let to: Vec<f64> = (0..dof)
                    .map(|j| {
                        (from[j] + rng.random_range(-len..=len))
                            .clamp(space.lower[j], space.upper[j])
                    })
                    .collect();
                motions.push(&from, &to).expect("motion");
            }
            let before = checker.configs_evaluated().expect("the CPU counts");
            let lazy = checker.check_motions(&motions, resolution).expect("lazy");
            assert!(checker.configs_evaluated().expect("the CPU counts") > before);
            let reference = checker
                .check_motions_reference(&motions, resolution)
                .expect("reference");
            // With fewer refinements: the reference's verdicts, and never valid where a
            // motion is not valid with more.
            let mut more = reference.clone();
            for max in (0..MAX_REFINEMENTS).rev() {
                let capped = checker
                    .check_motions_refined(&motions, resolution, max)
                    .expect("capped");
                let want = checker
                    .check_motions_reference_refined(&motions, resolution, max)
                    .expect("capped reference");
                assert_eq!(
                    capped, want,
                    "scene {s}, resolution {resolution}, {max} refinements"
                );
                for (i, (&c, &m)) in capped.iter().zip(&more).enumerate() {
                    assert!(
                        !c || m,
                        "scene {s}: motion {i} valid with {max} refinements only"
                    );
                    dropped += usize::from(m && !c);
                }
                more = capped;
            }
            let p = prepare_motions(space, &motions, resolution).expect("prepared");
            let mut scratch = Scratch::default();
            for i in 0..motions.len() {
                assert_eq!(
                    lazy[i],
                    reference[i],
                    "scene {s}, resolution {resolution}: motion {:?} -> {:?}",
                    motions.from.row(i),
                    motions.to.row(i)
                );
                total += 1;
                match (checker.motion_status(&p, i, &mut scratch), lazy[i]) {
                    (MotionStatus::Uncertain, true) => refined_valid += 1,
                    (MotionStatus::Uncertain, false) => refined_invalid += 1,
                    (MotionStatus::Collides, _) => colliding += 1,
                    (MotionStatus::Valid, _) => free += 1,
                }
            }
        }
    }
    eprintln!(
        "{total} motions: {free} free at once, {refined_valid} free after refinement, \
         {refined_invalid} never proven free, {colliding} colliding"
    );
    // Every kind of motion must be well represented for the comparison to mean something.
    for (what, n) in [
        ("free at once", free),
        ("free after refinement", refined_valid),
        ("never proven free", refined_invalid),
        ("colliding", colliding),
        ("valid only with more refinements", dropped),
    ] {
        assert!(n >= 20, "only {n} motions {what}");
    }
}
