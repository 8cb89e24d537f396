//! The growths of swept checks (`collision::sweep`): a self pair grown by the two bodies'
//! sweeps relative to the frame both hang from. On the MBM robots (Panda and UR5 serial arms,
//! Fetch a tree: head and arm on the torso): the table equals the one-body sums with an
//! independently found common frame, bit for bit; sampled motions never bring a pair's
//! distance further from its nearer checked configuration's than the pair's growths; and the
//! relative growths are smaller than the world sweeps for most pairs.

mod common;

use gpu_motion_planner::collision::detmath::Xf;
use gpu_motion_planner::collision::{
    body_sweep, body_sweep_below, frame_lca, frame_poses, CollisionModel, RobotShapes, Sweep,
};
use gpu_motion_planner::mbm;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The lowest common frame by ancestor sets (not by the index walk of `frame_lca`).
fn naive_lca(model: &CollisionModel, fa: i32, fb: i32) -> i32 {
    let chain = |mut f: i32| {
        let mut v = Vec::new();
        while f >= 0 {
            v.push(f);
            f = model.frames[f as usize].parent;
        }
        v
    };
    let (ca, cb) = (chain(fa), chain(fb));
    ca.into_iter().find(|f| cb.contains(f)).unwrap_or(-1)
}

fn world_center(model: &CollisionModel, frames: &[Xf], b: usize) -> [f32; 3] {
    let body = &model.bodies[b];
    if body.frame < 0 {
        return body.center;
    }
    frames[body.frame as usize].apply(&body.center)
}

fn dist(a: &[f32; 3], b: &[f32; 3]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

#[test]
fn pair_growths_bound_the_relative_motion_of_self_pairs() {
    let Some(data) = common::mbm_or_skip("sweep") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    for robot in ["panda", "ur5", "fetch"] {
        let r = mbm::load_robot(&data, robot).expect("robot loads");
        let problems = mbm::load_problems(&data, robot).expect("problems load");
        let checker = common::one_thread_checker(&r, &problems[0], RobotShapes::Spheres);
        let model = checker.model();
        let space = &r.group.space;
        let dof = space.dof();
        let nf = model.frames.len() as i32;
        for fa in -1..nf {
            for fb in -1..nf {
                assert_eq!(
                    frame_lca(model, fa, fb),
                    naive_lca(model, fa, fb),
                    "{robot}: frames {fa}, {fb}"
                );
            }
        }
        let (mut state, mut frames) = (Vec::new(), Vec::<Xf>::new());
        let mut pose = |q: &[f32], frames: &mut Vec<Xf>| {
            state.clone_from(&model.base_state);
            for (k, v) in q.iter().enumerate() {
                state[model.group_vars[k] as usize] = *v;
            }
            frame_poses(model, &state, frames);
        };
        let (mut smaller, mut pairs_seen, mut tested) = (0usize, 0usize, 0usize);
        let mut tightest = 0.0f32;
        for _ in 0..40 {
            let a: Vec<f32> = (0..dof)
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]) as f32)
                .collect();
            let b: Vec<f32> = (0..dof)
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]) as f32)
                .collect();
            let diff: Vec<f32> = b.iter().zip(&a).map(|(b, a)| b - a).collect();
            let n = rng.random_range(4..=24u32);
            let sweep = Sweep::of_motion(model, &diff, n);
            // The sums over the transposed table, and over `reach` itself where a model has none.
            assert_eq!(model.reach_by_frame.len(), model.reach.len(), "{robot}");
            let mut plain = model.clone();
            plain.reach_by_frame.clear();
            let plain_sweep = Sweep::of_motion(&plain, &diff, n);
            for bi in 0..model.bodies.len() {
                assert_eq!(
                    sweep.body(bi).to_bits(),
                    plain_sweep.body(bi).to_bits(),
                    "{robot}"
                );
                for c in 0..=model.frames.len() {
                    assert_eq!(
                        sweep.side(bi, c).to_bits(),
                        plain_sweep.side(bi, c).to_bits(),
                        "{robot}: body {bi}, column {c}"
                    );
                }
            }
            for bi in 0..model.bodies.len() {
                assert_eq!(
                    sweep.body(bi).to_bits(),
                    body_sweep(model, bi, &diff, n).to_bits(),
                    "{robot}: body {bi}"
                );
            }
            for p in &model.self_pairs {
                let (ia, ib) = (p[0] as usize, p[1] as usize);
                let c = naive_lca(model, model.bodies[ia].frame, model.bodies[ib].frame);
                let (ea, eb) = sweep.pair(model, ia, ib);
                assert_eq!(
                    (ea.to_bits(), eb.to_bits()),
                    (
                        body_sweep_below(model, ia, c, &diff, n).to_bits(),
                        body_sweep_below(model, ib, c, &diff, n).to_bits()
                    ),
                    "{robot}: pair {ia}, {ib} below frame {c}"
                );
                assert!(ea <= sweep.body(ia) && eb <= sweep.body(ib), "{robot}");
                pairs_seen += 1;
                smaller += usize::from(ea + eb < sweep.body(ia) + sweep.body(ib));
            }
            // A few segments, each at its two checked ends and a few points between.
            for _ in 0..3 {
                let s = rng.random_range(0..n);
                let at = |t: f32| -> Vec<f32> {
                    (0..dof).map(|j| a[j] + diff[j] * (t / n as f32)).collect()
                };
                let (mut f0, mut f1) = (Vec::new(), Vec::new());
                pose(&at(s as f32), &mut f0);
                pose(&at((s + 1) as f32), &mut f1);
                for _ in 0..4 {
                    let tau: f32 = rng.random_range(0.0..=1.0);
                    pose(&at(s as f32 + tau), &mut frames);
                    let near = if tau <= 0.5 { &f0 } else { &f1 };
                    for p in &model.self_pairs {
                        let (ia, ib) = (p[0] as usize, p[1] as usize);
                        let (ea, eb) = sweep.pair(model, ia, ib);
                        let d_t = dist(
                            &world_center(model, &frames, ia),
                            &world_center(model, &frames, ib),
                        );
                        let d_s = dist(
                            &world_center(model, near, ia),
                            &world_center(model, near, ib),
                        );
                        let change = (d_t - d_s).abs();
                        assert!(
                            change <= ea + eb + 1e-5,
                            "{robot}: pair {ia}, {ib} moved {change} apart, grown {ea} + {eb}"
                        );
                        if ea + eb > 1e-4 {
                            tightest = tightest.max(change / (ea + eb));
                        }
                        tested += 1;
                    }
                }
            }
        }
        eprintln!(
            "{robot}: {smaller} of {pairs_seen} pair growths below the world sweeps, \
             {tested} distances tested, tightest {tightest:.3} of the growth"
        );
        assert!(
            2 * smaller > pairs_seen,
            "{robot}: {smaller} of {pairs_seen}"
        );
        assert!(
            tightest > 0.1,
            "{robot}: the bound is exercised ({tightest})"
        );
    }
}
