//! The CPU checker's fast paths against the reference on MotionBenchMaker scenes. The CPU
//! backend answers configuration and motion checks with `frames_valid_fast` (pairs culled per
//! motion, centres computed once); `frames_valid`, `check_configs_reference` and
//! `check_motions_reference` are the reference the kernels are held to. Their verdicts must be
//! identical for every configuration and motion, with and without the sweep growth.

mod common;

use gpu_motion_planner::collision::detmath::Xf;
use gpu_motion_planner::collision::{
    body_sweep, frame_poses, frame_poses_fast, frames_valid, frames_valid_fast, motion_travel,
    prepare_motions, BodyGroups, Checker, ConfigBatch, CpuChecker, CullScratch, FastScratch,
    MotionBatch, MotionStatus, PairList, PreparedMotions, RobotShapes, Scratch, Sweep,
    MAX_REFINEMENTS, MOTION_PIECES, NO_SWEEP, REFINE_FACTOR,
};
use gpu_motion_planner::mbm;
use gpu_motion_planner::robot::JointSpace;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A configuration near the start, the goal or the line between them (most MBM contacts are
/// there), or uniform in the limits.
fn sample(rng: &mut ChaCha8Rng, space: &JointSpace, start: &[f64], goal: &[f64]) -> Vec<f64> {
    let dof = space.dof();
    if rng.random_range(0..5) == 0 {
        return (0..dof)
            .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
            .collect();
    }
    let t: f64 = rng.random_range(0.0..=1.0);
    let spread = rng.random_range(0.0..0.5);
    (0..dof)
        .map(|j| {
            (start[j] + (goal[j] - start[j]) * t + rng.random_range(-spread..=spread))
                .clamp(space.lower[j], space.upper[j])
        })
        .collect()
}

/// A motion from `from` to a point up to `len` away per joint.
fn motion_end(rng: &mut ChaCha8Rng, space: &JointSpace, from: &[f64], len: f64) -> Vec<f64> {
    (0..space.dof())
        .map(|j| (from[j] + rng.random_range(-len..=len)).clamp(space.lower[j], space.upper[j]))
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    configs: [usize; 2],
    motions: [usize; 2],
    steps: [usize; 2],
    kept_pairs: usize,
    all_pairs: usize,
}

/// Every configuration of a motion's first two refinement levels, grown and not, through
/// the culled pairs of its piece against the reference.
fn compare_steps(checker: &CpuChecker, motions: &MotionBatch, res: f64, tally: &mut Tally) {
    let model = checker.model();
    let scene = checker.scene_model();
    let space = checker.space();
    let dof = space.dof();
    let p = prepare_motions(space, motions, res).expect("prepared");
    let groups = BodyGroups::new(model);
    let all = PairList::all(model, scene, &groups);
    let (mut state, mut frames, mut travel) = (Vec::new(), Vec::<Xf>::new(), Vec::new());
    let mut fs = FastScratch::default();
    let pose = |q: &mut dyn Iterator<Item = f32>, state: &mut Vec<f32>, frames: &mut Vec<Xf>| {
        state.clone_from(&model.base_state);
        for (k, v) in q.enumerate() {
            state[model.group_vars[k] as usize] = v;
        }
        frame_poses(model, state, frames);
    };
    for i in 0..p.segments.len() {
        let start = &p.start[i * dof..(i + 1) * dof];
        let diff = &p.diff[i * dof..(i + 1) * dof];
        let n0 = p.segments[i];
        let sweep0: Vec<f32> = (0..model.bodies.len())
            .map(|b| body_sweep(model, b, diff, n0))
            .collect();
        // As the checker does: each piece culled at its midpoint with its share of the travel.
        motion_travel(model, diff, &mut travel);
        for t in &mut travel {
            *t *= 1.0 / MOTION_PIECES as f32;
        }
        let mut pieces = Vec::new();
        for k in 0..MOTION_PIECES {
            let mid = (2 * k + 1) as f32 / (2 * MOTION_PIECES) as f32;
            pose(
                &mut (0..dof).map(|j| start[j] + diff[j] * mid),
                &mut state,
                &mut frames,
            );
            let mut pairs = PairList::default();
            let mut scratch = CullScratch::default();
            PairList::for_motion_with(
                model,
                scene,
                &groups,
                &frames,
                &sweep0,
                &travel,
                &mut pairs,
                &mut scratch,
            );
            tally.kept_pairs += pairs.len();
            tally.all_pairs += all.len();
            pieces.push(pairs);
        }
        for n in [n0, n0 * REFINE_FACTOR] {
            let sweep = Sweep::of_motion(model, diff, n);
            for step in 0..=n {
                let k = ((step * MOTION_PIECES) / n).min(MOTION_PIECES - 1) as usize;
                let pairs = &pieces[k];
                let t = step as f32 / n as f32;
                pose(
                    &mut (0..dof).map(|j| start[j] + diff[j] * t),
                    &mut state,
                    &mut frames,
                );
                for grown in [&sweep, &NO_SWEEP] {
                    let mut growth = Vec::new();
                    groups.growth(grown.bodies(), &mut growth);
                    let want = frames_valid(model, scene, &frames, grown);
                    let got = frames_valid_fast(
                        model, scene, &groups, pairs, &frames, grown, &growth, &mut fs,
                    );
                    assert_eq!(
                        got,
                        want,
                        "motion {:?} -> {:?}, step {step} of {n}, grown {}",
                        motions.from.row(i),
                        motions.to.row(i),
                        !grown.is_empty()
                    );
                    let every = frames_valid_fast(
                        model, scene, &groups, &all, &frames, grown, &growth, &mut fs,
                    );
                    assert_eq!(every, want, "all pairs, step {step} of {n}");
                    tally.steps[usize::from(want)] += 1;
                }
            }
        }
    }
}

fn run_robot(robot: &str, shapes: RobotShapes, per_scene: usize, tally: &mut Tally) {
    let Some(data) = common::mbm_or_skip("fast_check") else {
        return;
    };
    let r = mbm::load_robot(&data, robot).expect("robot loads");
    let problems = mbm::load_problems(&data, robot).expect("problems load");
    let space = &r.group.space;
    let dof = space.dof();
    let mut rng = ChaCha8Rng::seed_from_u64(0xfa57);
    let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &problems {
        let count = per.entry(p.scene_name.as_str()).or_default();
        if *count >= per_scene {
            continue;
        }
        *count += 1;
        let checker = common::one_thread_checker(&r, p, shapes);
        let (start, goal) = r.start_goal(p).expect("start and goal");
        let rows: Vec<Vec<f64>> = (0..200)
            .map(|_| sample(&mut rng, space, &start, &goal))
            .collect();
        let batch = ConfigBatch::from_rows(dof, &rows).expect("batch");
        let fast = checker.check_configs(&batch).expect("fast");
        let reference = checker.check_configs_reference(&batch).expect("reference");
        assert_eq!(fast, reference, "{robot} {} #{}", p.scene_name, p.index);
        for v in &fast {
            tally.configs[usize::from(*v)] += 1;
        }
        for res in [0.02, 0.1] {
            let mut motions = MotionBatch::new(dof);
            for k in 0..40 {
                let from = match k % 4 {
                    0 => start.clone(),
                    1 => goal.clone(),
                    _ => sample(&mut rng, space, &start, &goal),
                };
                let len = rng.random_range(0.02..1.2);
                let to = motion_end(&mut rng, space, &from, len);
                motions.push(&from, &to).expect("motion");
            }
            let fast = checker.check_motions(&motions, res).expect("fast");
            let reference = checker
                .check_motions_reference(&motions, res)
                .expect("reference");
            assert_eq!(
                fast, reference,
                "{robot} {} #{} at resolution {res}",
                p.scene_name, p.index
            );
            for v in &fast {
                tally.motions[usize::from(*v)] += 1;
            }
            if res == 0.1 {
                compare_steps(&checker, &motions, res, tally);
            }
        }
    }
}

fn check(robot: &str, shapes: RobotShapes, per_scene: usize) {
    let mut tally = Tally::default();
    run_robot(robot, shapes, per_scene, &mut tally);
    if tally.configs == [0, 0] {
        return; // skipped: no MBM data
    }
    eprintln!(
        "{robot} ({shapes:?}): configurations {} in collision / {} free, motions {} / {}, \
         motion steps {} / {}; culled pair lists kept {:.1} % of the pairs",
        tally.configs[0],
        tally.configs[1],
        tally.motions[0],
        tally.motions[1],
        tally.steps[0],
        tally.steps[1],
        100.0 * tally.kept_pairs as f64 / tally.all_pairs.max(1) as f64
    );
    // Both verdicts must be well represented for the comparison to mean something.
    for n in tally
        .configs
        .iter()
        .chain(&tally.motions)
        .chain(&tally.steps)
    {
        assert!(*n >= 20, "too few of one verdict: {tally:?}");
    }
    assert!(tally.kept_pairs < tally.all_pairs, "nothing was culled");
}

#[test]
fn polytope_model_fast_checks_match_the_reference() {
    for (robot, per_scene) in [("panda", 3), ("ur5", 2), ("fetch", 2)] {
        check(robot, RobotShapes::Polytopes, per_scene);
    }
}

/// The sphere model has a dozen bodies (spheres) per link: the group tests of
/// `BodyGroups` leave out most of them, and must never change a verdict.
#[test]
fn sphere_model_fast_checks_match_the_reference() {
    for (robot, per_scene) in [("panda", 2), ("ur5", 1), ("fetch", 1)] {
        check(robot, RobotShapes::Spheres, per_scene);
    }
}

/// Growths that are not finite non-negative numbers (NaN, infinite, negative) never let a
/// group test leave out a pair the reference would test: the verdicts stay the reference's,
/// through every pair and through the pairs culled for a motion.
#[test]
fn odd_growths_keep_the_reference_verdicts() {
    let Some(data) = common::mbm_or_skip("fast_check") else {
        return;
    };
    let r = mbm::load_robot(&data, "panda").expect("robot loads");
    let problems = mbm::load_problems(&data, "panda").expect("problems load");
    let p = &problems[0];
    let checker = common::one_thread_checker(&r, p, RobotShapes::Spheres);
    let (model, scene, space) = (checker.model(), checker.scene_model(), checker.space());
    let (start, goal) = r.start_goal(p).expect("start and goal");
    let groups = BodyGroups::new(model);
    let all = PairList::all(model, scene, &groups);
    let mut rng = ChaCha8Rng::seed_from_u64(0x0dd);
    let (mut state, mut frames, mut fs) = (Vec::new(), Vec::<Xf>::new(), FastScratch::default());
    let mut verdicts = [0usize; 2];
    for i in 0..400 {
        let q = sample(&mut rng, space, &start, &goal);
        state.clone_from(&model.base_state);
        for (k, v) in q.iter().enumerate() {
            state[model.group_vars[k] as usize] = *v as f32;
        }
        frame_poses(model, &state, &mut frames);
        let odd = [f32::NAN, f32::INFINITY, -0.01, 0.05][i % 4];
        let sweep = Sweep::per_body(
            (0..model.bodies.len())
                .map(|b| if b % 7 == i % 7 { odd } else { 0.01 })
                .collect(),
        );
        let mut growth = Vec::new();
        groups.growth(sweep.bodies(), &mut growth);
        let want = frames_valid(model, scene, &frames, &sweep);
        let got = frames_valid_fast(
            model, scene, &groups, &all, &frames, &sweep, &growth, &mut fs,
        );
        assert_eq!(got, want, "configuration {i}, odd growth {odd}");
        // Culled for a motion with the odd growth, then checked with it.
        let mut culled = PairList::default();
        let travel = vec![0.02f32; model.bodies.len()];
        PairList::for_motion_with(
            model,
            scene,
            &groups,
            &frames,
            sweep.bodies(),
            &travel,
            &mut culled,
            &mut CullScratch::default(),
        );
        let got = frames_valid_fast(
            model, scene, &groups, &culled, &frames, &sweep, &growth, &mut fs,
        );
        assert_eq!(got, want, "configuration {i}, culled, odd growth {odd}");
        verdicts[usize::from(want)] += 1;
    }
    assert!(verdicts[0] >= 20 && verdicts[1] >= 20, "{verdicts:?}");
}

/// Every body belongs to exactly one group, on its own frame, and its bounding sphere lies
/// inside the group's sphere (what lets a failed group test stand for its bodies' tests).
#[test]
fn body_groups_enclose_their_bodies() {
    let Some(data) = common::mbm_or_skip("fast_check") else {
        return;
    };
    for robot in ["panda", "ur5", "fetch"] {
        let r = mbm::load_robot(&data, robot).expect("robot loads");
        let problems = mbm::load_problems(&data, robot).expect("problems load");
        for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
            let checker = common::one_thread_checker(&r, &problems[0], shapes);
            let model = checker.model();
            let groups = BodyGroups::new(model);
            let mut seen = vec![0usize; model.bodies.len()];
            for g in 0..groups.len() {
                let (frame, c, radius) = groups.sphere(g);
                for &b in groups.bodies(g) {
                    let body = &model.bodies[b as usize];
                    seen[b as usize] += 1;
                    assert_eq!(body.frame, frame, "{robot} body {b} in group {g}");
                    let d: f64 = (0..3)
                        .map(|i| (f64::from(body.center[i]) - f64::from(c[i])).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(
                        d + f64::from(body.radius) <= f64::from(radius),
                        "{robot} {shapes:?}: body {b} sticks out of group {g}"
                    );
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{robot} {shapes:?}: {seen:?}");
            if shapes == RobotShapes::Spheres {
                assert!(
                    groups.len() * 3 < model.bodies.len(),
                    "{robot}: {} groups for {} spheres",
                    groups.len(),
                    model.bodies.len()
                );
            }
        }
    }
}

/// The forward kinematics of the fast paths (`frame_poses_fast`, one-axis joints folded)
/// gives every frame entry equal (`==`) to the reference's `frame_poses`, and bit for bit
/// equal where it is not zero, on random configurations and at the angles where sine or
/// cosine is exactly zero or one, for every MBM robot.
#[test]
fn fast_forward_kinematics_equals_the_reference() {
    let Some(data) = common::mbm_or_skip("fast_check") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0xf0f0);
    for robot in ["panda", "ur5", "fetch"] {
        let r = mbm::load_robot(&data, robot).expect("robot loads");
        let problems = mbm::load_problems(&data, robot).expect("problems load");
        let p = &problems[0];
        let checker = common::one_thread_checker(&r, p, RobotShapes::Polytopes);
        let model = checker.model();
        let space = checker.space();
        let (mut a, mut b) = (Vec::<Xf>::new(), Vec::<Xf>::new());
        let specials = [
            0.0f32,
            std::f32::consts::FRAC_PI_2,
            -std::f32::consts::FRAC_PI_2,
            std::f32::consts::PI,
            -std::f32::consts::PI,
            1e-30,
            -1e-30,
        ];
        let mut compared = 0usize;
        for i in 0..20_000 {
            let mut state = model.base_state.clone();
            for (k, &v) in model.group_vars.iter().enumerate() {
                let lo = space.lower[k].max(-10.0) as f32;
                let hi = space.upper[k].min(10.0) as f32;
                state[v as usize] = if i % 4 == 0 {
                    specials[rng.random_range(0..specials.len())].clamp(lo, hi)
                } else {
                    rng.random_range(lo..=hi)
                };
            }
            frame_poses(model, &state, &mut a);
            frame_poses_fast(model, &state, &mut b);
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                for (u, v) in x.r.iter().chain(&x.t).zip(y.r.iter().chain(&y.t)) {
                    assert!(
                        u == v && (*u == 0.0 || u.to_bits() == v.to_bits()),
                        "{robot}: {u} vs {v} at {state:?}"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 0);
    }
}

/// The verdict of a motion is that of its finest level (`REFINE_FACTOR^MAX_REFINEMENTS` times
/// its segments) alone, and so does not depend on the levels in between: halving refinement
/// (levels 1, 2, 4, ... 64) would give the same verdicts as the quartering one in use. This is
/// the monotonicity `CpuChecker::motion_valid` relies on.
#[test]
fn a_motion_is_valid_exactly_when_its_finest_level_passes() {
    let Some(data) = common::mbm_or_skip("fast_check") else {
        return;
    };
    let finest = REFINE_FACTOR.pow(MAX_REFINEMENTS);
    assert_eq!(
        finest, 64,
        "the finest level is what the verdicts were defined by"
    );
    let r = mbm::load_robot(&data, "panda").expect("robot loads");
    let problems = mbm::load_problems(&data, "panda").expect("problems load");
    let space = &r.group.space;
    let dof = space.dof();
    let mut rng = ChaCha8Rng::seed_from_u64(0x64);
    let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
    let (mut valid, mut invalid, mut refined_valid) = (0, 0, 0);
    for p in &problems {
        let count = per.entry(p.scene_name.as_str()).or_default();
        if *count >= 2 {
            continue;
        }
        *count += 1;
        let checker = common::one_thread_checker(&r, p, RobotShapes::Spheres);
        let (start, goal) = r.start_goal(p).expect("start and goal");
        let mut motions = MotionBatch::new(dof);
        for k in 0..40 {
            let from = match k % 2 {
                0 => start.clone(),
                _ => sample(&mut rng, space, &start, &goal),
            };
            let len = rng.random_range(0.05..0.6);
            let to = motion_end(&mut rng, space, &from, len);
            motions.push(&from, &to).expect("motion");
        }
        let res = 0.02;
        let verdicts = checker.check_motions(&motions, res).expect("fast");
        let reference = checker
            .check_motions_reference(&motions, res)
            .expect("reference");
        assert_eq!(verdicts, reference, "{} #{}", p.scene_name, p.index);
        let prepared = prepare_motions(space, &motions, res).expect("prepare");
        let mut scratch = Scratch::default();
        for (i, &v) in verdicts.iter().enumerate() {
            let status_at = |factor: u32, scratch: &mut Scratch| {
                let one = PreparedMotions {
                    start: prepared.start[i * dof..(i + 1) * dof].to_vec(),
                    diff: prepared.diff[i * dof..(i + 1) * dof].to_vec(),
                    segments: vec![prepared.segments[i] * factor],
                };
                checker.motion_status(&one, 0, scratch)
            };
            let at_finest = status_at(finest, &mut scratch) == MotionStatus::Valid;
            let levels: Vec<MotionStatus> = [1, 2, 4, 8, 16, 32, 64]
                .iter()
                .map(|&f| status_at(f, &mut scratch))
                .collect();
            let halving = levels.contains(&MotionStatus::Valid);
            assert_eq!(v, at_finest, "{} #{} motion {i}", p.scene_name, p.index);
            assert_eq!(v, halving, "{} #{} motion {i}", p.scene_name, p.index);
            if v {
                valid += 1;
                if levels[0] == MotionStatus::Uncertain {
                    refined_valid += 1;
                }
            } else {
                invalid += 1;
            }
        }
    }
    eprintln!("motions: {valid} valid ({refined_valid} of them after refinement), {invalid} not");
    assert!(
        valid >= 20 && invalid >= 20 && refined_valid >= 5,
        "too few of one kind: {valid} valid ({refined_valid} refined), {invalid} invalid"
    );
}
