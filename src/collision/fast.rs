//! The CPU backend's fast form of [`frames_valid`]: the same verdict for every configuration
//! and growth, computed with less work. [`frames_valid`] stays the reference (and the twin of
//! the kernels); tests hold the two together (`tests/fast_check.rs`).
//!
//! Why the verdict is the same. [`frames_valid`] answers `false` exactly when some pair fails
//! its test: a body and an obstacle (bounding sphere near the obstacle, then a covering sphere
//! near it, then the body a sphere against a primitive or the GJK test failing), or a self
//! pair (bounding spheres, then covering spheres, then the GJK test). Each pair's test depends
//! only on the frames, the growths and the pair: the GJK hill-climbing caches start afresh at
//! every pair, and nothing else carries over. So the verdict is the conjunction of the pairs'
//! tests, whatever order they are visited in, and a pair whose bounding-sphere test is known
//! to fail (the pair is far apart) can be left out. This form
//!
//! - visits only the pairs of a [`PairList`]: every pair for a lone configuration, and for the
//!   configurations of a piece of one motion the pairs that pass a bounding-sphere test at the
//!   piece's midpoint grown by the most any body point can move from there
//!   ([`PairList::for_motion_with`], which gives the proof);
//! - computes each body's bounding-sphere centre once per configuration and each body's
//!   covering-sphere centres at most once (the reference recomputes them per obstacle and per
//!   pair), with the same expression (`Xf::apply` on the same frame and point);
//! - otherwise makes the very calls of the reference ([`sphere_near_obstacle`] for the
//!   bounding and covering spheres; the narrow phase of both kinds of pair is one function,
//!   shared with the reference).
//!
//! [`frames_valid`]: super::frames_valid

use super::cpu::{body_obstacle_narrow, frame_of, self_pair_narrow, sphere_near_obstacle};
use super::detmath::{axis_angle, dot, sincos, sub, Xf, V3};
use super::model::{obstacle_kind, CollisionModel, SceneModel};

/// Added to every bound of [`PairList::for_motion_with`] (m): more than 20 times the largest
/// disagreement that `f32` rounding can cause between those bounds and the tests they stand
/// for (see there).
pub const CULL_SLACK: f32 = 1e-3;

/// The pairs [`frames_valid_fast`] visits: (body, obstacle slot) and self-pair indices into
/// [`CollisionModel::self_pairs`], both in the reference's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairList {
    obstacle: Vec<(u32, u32)>,
    self_pairs: Vec<u32>,
}

impl PairList {
    /// Pairs in the list (obstacle and self pairs).
    pub fn len(&self) -> usize {
        self.obstacle.len() + self.self_pairs.len()
    }

    /// No pair at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every pair the reference visits: each body with each obstacle slot that is not empty
    /// and of a known kind, and every self pair.
    pub fn all(model: &CollisionModel, scene: &SceneModel) -> Self {
        let mut l = PairList::default();
        for bi in 0..model.bodies.len() {
            for (slot, o) in scene.obstacles.iter().enumerate() {
                if o.kind <= obstacle_kind::MESH {
                    l.obstacle.push((bi as u32, slot as u32));
                }
            }
        }
        l.self_pairs = (0..model.self_pairs.len() as u32).collect();
        l
    }

    /// The pairs that can pass their bounding-sphere test at some configuration of a motion
    /// (or of a piece of one), for any growth up to `growth[b]` per body.
    ///
    /// `frames` are the poses at the midpoint of the motion (piece) and `travel[b]` bounds how
    /// far any point of body `b` moves over it (for a whole motion `sum_f |mult_f diff_f|
    /// reach[b, f]`, see [`motion_travel`] and [`CollisionModel::reach`]; for a piece of a
    /// straight joint-space motion the same fraction of it), so every configuration there has
    /// each body within `travel[b] / 2` of its midpoint pose. A pair is left out when its bounding-sphere test
    /// fails at the midpoint with each body's radius grown by `growth[b] + travel[b] / 2 +`
    /// [`CULL_SLACK`]: then, in exact arithmetic, the pair is farther apart than its test's
    /// reach by more than the slack at every configuration. The tests run in `f32`: the
    /// sphere-obstacle and sphere-sphere expressions are off by at most a few ulps of the
    /// coordinates (< 1e-5 m for a robot within 10 m of the origin), and the poses computed
    /// in `f32` differ from the exact ones by the `sincos` error (2e-6 rad per joint) times
    /// the reach plus the rounding of the chain of transforms (together < 5e-5 m for arms
    /// of a few metres); the slack of 1 mm covers both many times over, so the left-out
    /// pair fails its test at every configuration. `travel` must be computed rounding up
    /// (f64, with a relative allowance). A growth or travel that is not a finite
    /// non-negative number keeps every pair.
    ///
    /// `scratch` is reusable space (no allocation once it has grown).
    pub fn for_motion_with(
        model: &CollisionModel,
        scene: &SceneModel,
        frames: &[Xf],
        growth: &[f32],
        travel: &[f32],
        out: &mut PairList,
        scratch: &mut CullScratch,
    ) {
        out.obstacle.clear();
        out.self_pairs.clear();
        let m = model.margin;
        let nb = model.bodies.len();
        let grow = &mut scratch.grow;
        grow.clear();
        for bi in 0..nb {
            let g = growth.get(bi).copied().unwrap_or(0.0);
            let t = travel.get(bi).copied().unwrap_or(f32::INFINITY);
            let ok = g.is_finite() && g >= 0.0 && t.is_finite() && t >= 0.0;
            // Infinite: every test with it passes (the pair is kept).
            grow.push(if ok {
                g + 0.5 * t + CULL_SLACK
            } else {
                f32::INFINITY
            });
        }
        let centers = &mut scratch.centers;
        centers.clear();
        centers.extend(
            model
                .bodies
                .iter()
                .map(|b| frame_of(frames, b.frame).apply(&b.center)),
        );
        for (bi, b) in model.bodies.iter().enumerate() {
            for (slot, o) in scene.obstacles.iter().enumerate() {
                if o.kind > obstacle_kind::MESH {
                    continue;
                }
                let g = grow[bi];
                if g == f32::INFINITY || sphere_near_obstacle(&centers[bi], b.radius + g, o, m) {
                    out.obstacle.push((bi as u32, slot as u32));
                }
            }
        }
        for (k, p) in model.self_pairs.iter().enumerate() {
            let (ia, ib) = (p[0] as usize, p[1] as usize);
            let d = sub(&centers[ia], &centers[ib]);
            let rr = model.bodies[ia].radius + model.bodies[ib].radius + m + grow[ia] + grow[ib];
            if rr == f32::INFINITY || dot(&d, &d) <= rr * rr {
                out.self_pairs.push(k as u32);
            }
        }
    }
}

/// Scratch space of [`PairList::for_motion_with`].
#[derive(Clone, Debug, Default)]
pub struct CullScratch {
    /// Per body: the growth its bounding sphere is tested with.
    grow: Vec<f32>,
    /// Per body: its bounding-sphere centre at the midpoint.
    centers: Vec<V3>,
}

/// How far any point of each body can move over a whole motion whose group joints change by
/// `diff` (the per-joint difference of [`super::PreparedMotions`]): `sum_f |mult_f diff_f|
/// reach[b, f]` over the moving frames (see [`CollisionModel::reach`]), summed in f64 and
/// rounded up by a relative 1e-4, for [`PairList::for_motion_with`]. `diff` must have the model's
/// dof.
pub fn motion_travel(model: &CollisionModel, diff: &[f32], out: &mut Vec<f32>) {
    let nf = model.frames.len();
    out.clear();
    for b in 0..model.bodies.len() {
        let mut acc = 0.0f64;
        for (f, fr) in model.frames.iter().enumerate() {
            let k = model.var_group[fr.var as usize];
            if k < 0 {
                continue;
            }
            let d = diff.get(k as usize).copied().unwrap_or(f32::INFINITY);
            acc += (fr.mult as f64).abs() * (d as f64).abs() * model.reach[b * nf + f] as f64;
        }
        out.push((acc * (1.0 + 1e-4)) as f32);
    }
}

/// [`frame_poses`](super::frame_poses) with the zeros of one-axis joints folded away: the
/// same frames, entry for entry equal (`==`) to the reference's. A revolute joint about a
/// coordinate axis (every joint of the MBM robots) has a Rodrigues matrix whose off-axis
/// entries are exact zeros (`t x y` with `x` or `y` zero, `s` times a zero), whose axis
/// entry is `(1 - c) + c` and whose other entries are `0 + c`, `0 - s` and `0 + s`; a
/// prismatic joint has the identity. Each product with such a zero is `+-0` and adding
/// `+-0` to a number leaves it unchanged, so leaving those terms out of `origin * local`
/// changes at most the sign of an entry that is zero. The rest is the reference's
/// arithmetic in its order, but for sums of two products taken the other way round, which
/// IEEE addition (commutative) does not see. Signs of zeros cannot change a verdict: they compare equal, and
/// the collision tests only add, multiply, take square roots and compare the frames'
/// entries, never divide by them.
#[inline]
pub fn frame_poses_fast(model: &CollisionModel, state: &[f32], out: &mut Vec<Xf>) {
    out.clear();
    for f in &model.frames {
        let q = f.mult * state[f.var as usize] + f.offset;
        let a = &f.origin.r;
        // A revolute joint about +x, +y or +z: the rotation mixes columns `u` and `v` of the
        // origin (v = u + 1 mod 3, the right-handed order) and scales column `w` by `(1 - c) + c`.
        let plane = match f.axis {
            [0.0, 0.0, 1.0] => Some((0, 1, 2)),
            [1.0, 0.0, 0.0] => Some((1, 2, 0)),
            [0.0, 1.0, 0.0] => Some((2, 0, 1)),
            _ => None,
        };
        let joint = if let (0, Some((u, v, w))) = (f.kind, plane) {
            let (s, c) = sincos(q);
            let e = (1.0 - c) + c;
            let mut r = [0.0f32; 9];
            for i in 0..3 {
                r[i * 3 + u] = a[i * 3 + u] * c + a[i * 3 + v] * s;
                r[i * 3 + v] = a[i * 3 + u] * -s + a[i * 3 + v] * c;
                r[i * 3 + w] = a[i * 3 + w] * e;
            }
            Xf { r, t: f.origin.t }
        } else if f.kind == 0 {
            f.origin.mul(&Xf {
                r: axis_angle(&f.axis, q),
                t: [0.0; 3],
            })
        } else {
            Xf {
                r: f.origin.r,
                t: f.origin
                    .apply(&[f.axis[0] * q, f.axis[1] * q, f.axis[2] * q]),
            }
        };
        let world = if f.parent < 0 {
            joint
        } else {
            out[f.parent as usize].mul(&joint)
        };
        out.push(world);
    }
}

/// Scratch space of [`frames_valid_fast`].
#[derive(Clone, Debug, Default)]
pub struct FastScratch {
    /// World bounding-sphere centre per body.
    centers: Vec<V3>,
    /// World centre per covering sphere (valid for bodies with `spheres_done`).
    sphere_centers: Vec<V3>,
    /// Per body: its covering-sphere centres are computed for this configuration.
    spheres_done: Vec<bool>,
}

impl FastScratch {
    /// Body `bi`'s covering-sphere centres for this configuration (computed on first use).
    #[inline(always)]
    fn covering(&mut self, model: &CollisionModel, bi: usize, xf: &Xf) -> &[V3] {
        let b = &model.bodies[bi];
        let range = b.sphere_start as usize..(b.sphere_start + b.sphere_count) as usize;
        if !self.spheres_done[bi] {
            for (k, sp) in model.spheres[range.clone()].iter().enumerate() {
                self.sphere_centers[range.start + k] = xf.apply(&[sp[0], sp[1], sp[2]]);
            }
            self.spheres_done[bi] = true;
        }
        &self.sphere_centers[range]
    }
}

/// The verdict of [`frames_valid`](super::frames_valid) (see the module documentation),
/// visiting the pairs of `pairs` only: a [`PairList::all`] of `model` and `scene`, or a
/// [`PairList::for_motion_with`] of the motion the frames belong to, with growths at least
/// `sweep`.
pub fn frames_valid_fast(
    model: &CollisionModel,
    scene: &SceneModel,
    pairs: &PairList,
    frames: &[Xf],
    sweep: &[f32],
    s: &mut FastScratch,
) -> bool {
    let m = model.margin;
    let nb = model.bodies.len();
    s.centers.clear();
    for b in &model.bodies {
        s.centers.push(frame_of(frames, b.frame).apply(&b.center));
    }
    s.spheres_done.clear();
    s.spheres_done.resize(nb, false);
    s.sphere_centers.resize(model.spheres.len(), [0.0; 3]);
    for &(bi, slot) in &pairs.obstacle {
        let (bi, slot) = (bi as usize, slot as usize);
        let (Some(b), Some(o)) = (model.bodies.get(bi), scene.obstacles.get(slot)) else {
            continue;
        };
        let e = sweep.get(bi).copied().unwrap_or(0.0);
        let bc = s.centers[bi];
        if !sphere_near_obstacle(&bc, b.radius + e, o, m) {
            continue;
        }
        let xf = frame_of(frames, b.frame);
        if b.inflate == 0.0 && b.sphere_count > 0 {
            let spheres =
                &model.spheres[b.sphere_start as usize..(b.sphere_start + b.sphere_count) as usize];
            let centers = s.covering(model, bi, &xf);
            let near = spheres
                .iter()
                .zip(centers)
                .any(|(sp, c)| sphere_near_obstacle(c, sp[3] + e, o, m));
            if !near {
                continue;
            }
        }
        if !body_obstacle_narrow(model, scene, b, xf, &bc, e, o) {
            return false;
        }
    }
    for &k in &pairs.self_pairs {
        let Some(p) = model.self_pairs.get(k as usize) else {
            continue;
        };
        let (ia, ib) = (p[0] as usize, p[1] as usize);
        let ba = &model.bodies[ia];
        let bb = &model.bodies[ib];
        let ea = sweep.get(ia).copied().unwrap_or(0.0);
        let eb = sweep.get(ib).copied().unwrap_or(0.0);
        let d = sub(&s.centers[ia], &s.centers[ib]);
        let rr = ba.radius + bb.radius + m + ea + eb;
        if dot(&d, &d) > rr * rr {
            continue;
        }
        let xa = frame_of(frames, ba.frame);
        let xb = frame_of(frames, bb.frame);
        s.covering(model, ia, &xa);
        s.covering(model, ib, &xb);
        let sa =
            &model.spheres[ba.sphere_start as usize..(ba.sphere_start + ba.sphere_count) as usize];
        let sb =
            &model.spheres[bb.sphere_start as usize..(bb.sphere_start + bb.sphere_count) as usize];
        let ca = &s.sphere_centers
            [ba.sphere_start as usize..(ba.sphere_start + ba.sphere_count) as usize];
        let cb = &s.sphere_centers
            [bb.sphere_start as usize..(bb.sphere_start + bb.sphere_count) as usize];
        let near = sa.iter().zip(ca).any(|(s1, c1)| {
            sb.iter().zip(cb).any(|(t1, c2)| {
                let d = sub(c1, c2);
                let rr = s1[3] + t1[3] + m + ea + eb;
                dot(&d, &d) <= rr * rr
            })
        });
        if !near {
            continue;
        }
        if !self_pair_narrow(model, ba, bb, xa, xb, d, (ea, eb)) {
            return false;
        }
    }
    true
}
