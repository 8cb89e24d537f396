//! The eight-lane checks of sphere models (`collision::lanes`) against the scalar reference:
//! sine and cosine, forward kinematics and verdicts bit for bit, on every instruction set the
//! machine has, on the MotionBenchMaker sphere models and scenes.

mod common;

use gpu_motion_planner::collision::detmath::{sincos, Xf};
use gpu_motion_planner::collision::lanes::{
    first_lanes, Arr8, Isa, Lane8, LaneScratch, Lanes, Need, LANES,
};
use gpu_motion_planner::collision::{
    frame_poses_fast, frames_valid, BodyGroups, Checker, ConfigBatch, CullScratch, MotionBatch,
    PairList, RobotShapes, Sweep, NO_SWEEP,
};
use gpu_motion_planner::mbm;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Every instruction set this machine can run.
fn isas() -> Vec<Isa> {
    let mut v = vec![Isa::Portable];
    if Isa::best() != Isa::Portable {
        v.push(Isa::best());
    }
    v
}

/// Arguments for the sine and cosine: quadrant boundaries and their neighbours, zeros,
/// random joint-sized values, and values large enough for the scalar fall-back.
fn angles(rng: &mut ChaCha8Rng) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        8_388_607.0,
        8_388_608.0,
        -1e7,
        3e9,
        1e30,
    ];
    for k in -40..=40 {
        let b = k as f32 * std::f32::consts::FRAC_PI_4;
        v.extend([
            b,
            f32::from_bits(b.to_bits() + 1),
            f32::from_bits(b.to_bits().wrapping_sub(1)),
        ]);
    }
    for _ in 0..20_000 {
        v.push(rng.random_range(-7.0f32..7.0));
    }
    for _ in 0..2_000 {
        v.push(rng.random_range(-2e7f32..2e7));
    }
    v
}

fn sincos_lanes<V: Lane8>(x: [f32; LANES]) -> ([f32; LANES], [f32; LANES]) {
    let (s, c) = V::from_array(x).sincos();
    (s.to_array(), c.to_array())
}

#[test]
fn lane_sine_and_cosine_equal_the_scalar_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5c);
    let xs = angles(&mut rng);
    let mut checked = 0;
    for chunk in xs.chunks(LANES) {
        let mut x = [0.5f32; LANES];
        x[..chunk.len()].copy_from_slice(chunk);
        let mut results = vec![sincos_lanes::<Arr8>(x)];
        #[cfg(target_arch = "x86_64")]
        if Isa::best() != Isa::Portable {
            results.push(avx_sincos(x));
        }
        for (s, c) in results {
            for l in 0..LANES {
                let (es, ec) = sincos(x[l]);
                assert_eq!(s[l].to_bits(), es.to_bits(), "sin({})", x[l]);
                assert_eq!(c[l].to_bits(), ec.to_bits(), "cos({})", x[l]);
                checked += 1;
            }
        }
    }
    assert!(checked >= xs.len());
}

#[cfg(target_arch = "x86_64")]
fn avx_sincos(x: [f32; LANES]) -> ([f32; LANES], [f32; LANES]) {
    #[target_feature(enable = "avx2")]
    fn run(x: [f32; LANES]) -> ([f32; LANES], [f32; LANES]) {
        sincos_lanes::<gpu_motion_planner::collision::lanes::Avx8>(x)
    }
    assert!(std::arch::is_x86_feature_detected!("avx2"));
    // SAFETY: the CPU has AVX2 (asserted above).
    unsafe { run(x) }
}

/// A configuration near the start, the goal or the line between them, or uniform.
fn sample(rng: &mut ChaCha8Rng, lower: &[f64], upper: &[f64], a: &[f64], b: &[f64]) -> Vec<f32> {
    let t: f64 = rng.random_range(0.0..=1.0);
    let uniform = rng.random_range(0..4) == 0;
    (0..a.len())
        .map(|j| {
            let v = if uniform {
                rng.random_range(lower[j]..=upper[j])
            } else {
                a[j] + (b[j] - a[j]) * t + rng.random_range(-0.3..=0.3)
            };
            v.clamp(lower[j], upper[j]) as f32
        })
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    /// Lane verdicts compared: free, in collision.
    verdicts: [usize; 2],
    /// Lanes where the grown check failed and the unswept one passed.
    swept_only: usize,
    /// Calls where `AnyUngrown` stopped before deciding every lane.
    any_stopped: usize,
    /// Calls where `AnyUngrown` found no lane failing ungrown, with lanes failing grown.
    any_swept_only: usize,
}

/// Forward kinematics and verdicts of random lane batches against the scalar reference, with
/// and without growth, through every pair and through pairs culled for a motion, with every
/// active-lane pattern.
fn compare_robot(robot: &str, per_scene: usize, tally: &mut Tally) {
    let Some(data) = common::mbm_or_skip("lanes") else {
        return;
    };
    let r = mbm::load_robot(&data, robot).expect("robot loads");
    let problems = mbm::load_problems(&data, robot).expect("problems load");
    let (lower, upper) = (&r.group.space.lower, &r.group.space.upper);
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a9e5);
    let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &problems {
        let count = per.entry(p.scene_name.as_str()).or_default();
        if *count >= per_scene {
            continue;
        }
        *count += 1;
        let c = common::one_thread_checker(&r, p, RobotShapes::Spheres);
        assert!(
            c.lane_isa().is_some(),
            "{robot}: the sphere model is checked in lanes"
        );
        let (model, scene) = (c.model(), c.scene_model());
        let (start, goal) = r.start_goal(p).expect("start and goal");
        let groups = BodyGroups::new(model);
        let mut rest = Vec::new();
        groups.growth(&[], &mut rest);
        let all = PairList::all(model, scene, &groups);
        let mut ls = LaneScratch::default();
        let (mut state, mut frames) = (Vec::new(), Vec::<Xf>::new());
        for round in 0..60 {
            let qs: Vec<Vec<f32>> = (0..LANES)
                .map(|_| sample(&mut rng, lower, upper, &start, &goal))
                .collect();
            // No growth, growths given per body, or a motion's (self pairs grown by their
            // relative sweeps) between lanes 0 and 1 in 1 to 8 segments.
            let sweep = match round % 4 {
                0 => Sweep::none(),
                1 => Sweep::per_body(
                    (0..model.bodies.len())
                        .map(|b| 0.01 * (1 + b % 3) as f32)
                        .collect(),
                ),
                _ => {
                    let diff: Vec<f32> = qs[1].iter().zip(&qs[0]).map(|(b, a)| b - a).collect();
                    Sweep::of_motion(model, &diff, 1 + (round as u32 / 4) % 8)
                }
            };
            let mut growth = Vec::new();
            groups.growth(sweep.bodies(), &mut growth);
            // Pairs culled for a motion through lane 0's configuration.
            let mut culled = PairList::default();
            let mid: Vec<Xf> = {
                state.clone_from(&model.base_state);
                for (k, v) in qs[0].iter().enumerate() {
                    state[model.group_vars[k] as usize] = *v;
                }
                frame_poses_fast(model, &state, &mut frames);
                frames.clone()
            };
            let travel = vec![0.05f32; model.bodies.len()];
            PairList::for_motion_with(
                model,
                scene,
                &groups,
                &mid,
                sweep.bodies(),
                &travel,
                &mut culled,
                &mut CullScratch::default(),
            );
            let active = [u8::MAX, first_lanes(3), 0b1010_0110][round % 3];
            for isa in isas() {
                let lanes = Lanes {
                    model,
                    scene,
                    groups: &groups,
                    rest_growth: &rest,
                    isa,
                };
                let lane_frames = lanes.frames(|j, l| qs[l][j], &mut ls);
                for (pairs, culled_list) in [(&all, false), (&culled, true)] {
                    let check = |need, ls: &mut LaneScratch| {
                        lanes.check(|j, l| qs[l][j], pairs, &sweep, &growth, active, need, ls)
                    };
                    let v = check(Need::Every, &mut ls);
                    // The motion check's form: whether a lane fails ungrown, and where none
                    // does, the whole grown verdict.
                    let any = check(Need::AnyUngrown, &mut ls);
                    let ctx = format!("{robot} {isa:?} round {round} culled {culled_list}");
                    assert_eq!(any.unswept != 0, v.unswept != 0, "AnyUngrown, {ctx}");
                    assert_eq!(any.unswept & !v.unswept, 0, "AnyUngrown ungrown, {ctx}");
                    assert_eq!(any.unswept & !any.swept, 0, "AnyUngrown ungrown, {ctx}");
                    assert_eq!(any.swept & !v.swept, 0, "AnyUngrown grown, {ctx}");
                    if any.unswept == 0 {
                        assert_eq!(any.swept, v.swept, "AnyUngrown grown, {ctx}");
                        tally.any_swept_only += usize::from(any.swept != 0);
                    } else {
                        tally.any_stopped += usize::from(any.swept != v.swept);
                    }
                    for (l, q) in qs.iter().enumerate() {
                        state.clone_from(&model.base_state);
                        for (k, x) in q.iter().enumerate() {
                            state[model.group_vars[k] as usize] = *x;
                        }
                        frame_poses_fast(model, &state, &mut frames);
                        for (f, x) in frames.iter().enumerate() {
                            assert_eq!(lane_frames[f][l], *x, "{robot} {isa:?} frame {f} lane {l}");
                        }
                        // A culled list speaks only for configurations near the motion.
                        if culled_list && l != 0 {
                            continue;
                        }
                        let bit = 1u8 << l;
                        if active & bit == 0 {
                            assert_eq!(v.swept & bit, 0, "inactive lanes are not reported");
                            continue;
                        }
                        let swept_ok = frames_valid(model, scene, &frames, &sweep);
                        let rest_ok = frames_valid(model, scene, &frames, &NO_SWEEP);
                        let ctx = format!(
                            "{robot} {} #{} {isa:?} round {round} lane {l}",
                            p.scene_name, p.index
                        );
                        assert_eq!(v.swept & bit == 0, swept_ok, "grown, {ctx}");
                        if !swept_ok {
                            assert_eq!(v.unswept & bit == 0, rest_ok, "unswept, {ctx}");
                            tally.swept_only += usize::from(rest_ok);
                        }
                        tally.verdicts[usize::from(swept_ok)] += 1;
                    }
                }
            }
        }
    }
}

#[test]
fn lane_kinematics_and_verdicts_equal_the_reference() {
    let mut tally = Tally::default();
    for (robot, per_scene) in [("panda", 2), ("ur5", 1), ("fetch", 1)] {
        compare_robot(robot, per_scene, &mut tally);
    }
    if tally.verdicts == [0, 0] {
        return; // skipped: no MBM data
    }
    eprintln!("{tally:?}");
    assert!(
        tally.verdicts[0] >= 100 && tally.verdicts[1] >= 100,
        "{tally:?}"
    );
    assert!(tally.swept_only >= 10, "{tally:?}");
    assert!(
        tally.any_stopped >= 10 && tally.any_swept_only >= 1,
        "{tally:?}"
    );
}

/// The checker's answers with lanes on each instruction set and with lanes off are the same
/// (configurations and motions, which also exercise the motion culling and the refinement
/// around failures), and equal the reference.
#[test]
fn checker_answers_the_same_with_and_without_lanes() {
    let Some(data) = common::mbm_or_skip("lanes") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a4e);
    let mut seen = [0usize; 2];
    for robot in ["panda", "fetch"] {
        let r = mbm::load_robot(&data, robot).expect("robot loads");
        let problems = mbm::load_problems(&data, robot).expect("problems load");
        let (lower, upper) = (&r.group.space.lower, &r.group.space.upper);
        let dof = r.group.space.dof();
        for p in problems.iter().step_by(97).take(4) {
            let mut c = common::one_thread_checker(&r, p, RobotShapes::Spheres);
            let (start, goal) = r.start_goal(p).expect("start and goal");
            let rows: Vec<Vec<f64>> = (0..61)
                .map(|_| {
                    sample(&mut rng, lower, upper, &start, &goal)
                        .iter()
                        .map(|&v| v as f64)
                        .collect()
                })
                .collect();
            let configs = ConfigBatch::from_rows(dof, &rows).expect("batch");
            let mut motions = MotionBatch::new(dof);
            for k in 0..30 {
                let from = if k % 3 == 0 {
                    start.clone()
                } else {
                    rows[k].clone()
                };
                motions.push(&from, &rows[k + 30]).expect("motion");
            }
            let want_c = c.check_configs_reference(&configs).expect("reference");
            let want_m = c
                .check_motions_reference(&motions, 0.02)
                .expect("reference");
            let mut modes: Vec<Option<Isa>> = vec![None];
            modes.extend(isas().into_iter().map(Some));
            for mode in modes {
                c.set_lanes(mode);
                assert_eq!(c.lane_isa(), mode);
                let ctx = format!("{robot} {} #{} lanes {mode:?}", p.scene_name, p.index);
                assert_eq!(c.check_configs(&configs).expect("configs"), want_c, "{ctx}");
                assert_eq!(
                    c.check_motions(&motions, 0.02).expect("motions"),
                    want_m,
                    "{ctx}"
                );
                for max in [0, 1, 3] {
                    assert_eq!(
                        c.check_motions_refined(&motions, 0.02, max)
                            .expect("motions"),
                        c.check_motions_reference_refined(&motions, 0.02, max)
                            .expect("reference"),
                        "{ctx}, {max} refinements"
                    );
                }
            }
            for v in want_c.iter().chain(&want_m) {
                seen[usize::from(*v)] += 1;
            }
        }
    }
    assert!(seen[0] >= 20 && seen[1] >= 20, "{seen:?}");
}

/// Only sphere models are checked in lanes: a polytope model needs GJK.
#[test]
fn polytope_models_are_checked_one_configuration_at_a_time() {
    let Some(data) = common::mbm_or_skip("lanes") else {
        return;
    };
    let r = mbm::load_robot(&data, "panda").expect("robot loads");
    let problems = mbm::load_problems(&data, "panda").expect("problems load");
    let mut c = common::one_thread_checker(&r, &problems[0], RobotShapes::Polytopes);
    assert_eq!(c.lane_isa(), None);
    c.set_lanes(Some(Isa::Portable));
    assert_eq!(
        c.lane_isa(),
        None,
        "set_lanes must not enable lanes for polytopes"
    );
    assert!(
        common::one_thread_checker(&r, &problems[0], RobotShapes::Spheres)
            .lane_isa()
            .is_some()
    );
}
