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
//! - groups the bodies that share a frame ([`BodyGroups`]: the sphere model has a dozen
//!   spheres per link) and leaves out every pair of a group and an obstacle, or of two
//!   groups, whose test on a sphere around the whole group fails with [`CULL_SLACK`] to
//!   spare: each body's bounding sphere lies inside its group's, so each of those pairs fails
//!   its own bounding-sphere test (the tests measure distances to convex shapes, which grow by
//!   at most the distance the centre moves);
//! - computes each body's bounding-sphere centre at most once per configuration, and only for
//!   the groups that pass their test, and each body's covering-sphere centres at most once
//!   (the reference recomputes them per obstacle and per pair), with the same expression
//!   (`Xf::apply` on the same frame and point);
//! - otherwise makes the very calls of the reference ([`sphere_near_obstacle`] for the
//!   bounding and covering spheres; the narrow phase of both kinds of pair is one function,
//!   shared with the reference).
//!
//! [`frames_valid`]: super::frames_valid

use super::cpu::{body_obstacle_narrow, frame_of, self_pair_narrow, sphere_near_obstacle};
use super::detmath::{axis_angle, dot, sincos, sub, Xf, V3};
use super::model::{bound_of, obstacle_kind, CollisionModel, SceneModel};
use super::sweep::Sweep;

/// Added to every bound of [`PairList::for_motion_with`] (m): more than 20 times the largest
/// disagreement that `f32` rounding can cause between those bounds and the tests they stand
/// for (see there).
pub const CULL_SLACK: f32 = 1e-3;

/// The robot's bodies grouped by the frame they move with, each group with a sphere (in the
/// frame) around the bounding spheres of all its bodies, and the self pairs bucketed by the
/// groups of their two bodies. [`PairList`] and [`frames_valid_fast`] test a group's sphere
/// before any of its bodies' (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BodyGroups {
    /// Per group: its frame, sphere centre in the frame and radius (infinite when a body's
    /// bounding sphere is not finite: such a group is never left out).
    groups: Vec<(i32, V3, f32)>,
    /// Per group: its bodies are `members[starts[g]..starts[g + 1]]` (len = groups + 1).
    starts: Vec<u32>,
    /// Body indices, group after group, each group's in increasing order.
    members: Vec<u32>,
    /// Self-pair buckets: the groups of the two bodies and the end of the bucket's indices in
    /// `self_order` (a bucket starts where the one before it ends).
    self_buckets: Vec<(u32, u32, u32)>,
    /// Indices into [`CollisionModel::self_pairs`], bucket after bucket.
    self_order: Vec<u32>,
}

impl BodyGroups {
    /// Groups the bodies of `model` by frame (in order of first appearance).
    pub fn new(model: &CollisionModel) -> Self {
        let mut frames: Vec<i32> = Vec::new();
        let mut group_of = Vec::with_capacity(model.bodies.len());
        for b in &model.bodies {
            let g = match frames.iter().position(|&f| f == b.frame) {
                Some(g) => g,
                None => {
                    frames.push(b.frame);
                    frames.len() - 1
                }
            };
            group_of.push(g as u32);
        }
        let mut g = BodyGroups {
            starts: vec![0],
            ..Default::default()
        };
        for (gi, &frame) in frames.iter().enumerate() {
            let bodies: Vec<usize> = (0..model.bodies.len())
                .filter(|&b| group_of[b] as usize == gi)
                .collect();
            g.members.extend(bodies.iter().map(|&b| b as u32));
            g.starts.push(g.members.len() as u32);
            g.groups.push(enclosing_sphere(model, &bodies, frame));
        }
        let mut buckets: std::collections::BTreeMap<(u32, u32), Vec<u32>> = Default::default();
        for (k, p) in model.self_pairs.iter().enumerate() {
            let ga = group_of.get(p[0] as usize).copied().unwrap_or(0);
            let gb = group_of.get(p[1] as usize).copied().unwrap_or(0);
            buckets.entry((ga, gb)).or_default().push(k as u32);
        }
        for ((ga, gb), pairs) in buckets {
            g.self_order.extend(pairs);
            g.self_buckets.push((ga, gb, g.self_order.len() as u32));
        }
        g
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// No group (a model without bodies).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Per group, what its sphere is grown by when its bodies are grown by `sweep` (missing
    /// entries count 0, as in [`frames_valid_fast`]): the largest growth of its bodies plus
    /// [`CULL_SLACK`], or infinity (the group is never left out) where a growth is not a
    /// finite non-negative number. [`frames_valid_fast`] takes it with the same `sweep`.
    pub fn growth(&self, sweep: &[f32], out: &mut Vec<f32>) {
        out.clear();
        for g in 0..self.groups.len() {
            let mut e = 0.0f32;
            for &bi in self.bodies(g) {
                let x = sweep.get(bi as usize).copied().unwrap_or(0.0);
                // NaN fails both comparisons: the group is then kept.
                e = if (0.0..f32::INFINITY).contains(&x) {
                    e.max(x)
                } else {
                    f32::INFINITY
                };
            }
            let r = e + CULL_SLACK;
            out.push(if r.is_finite() { r } else { f32::INFINITY });
        }
    }

    /// Group `g`'s frame, sphere centre (in the frame) and radius.
    pub fn sphere(&self, g: usize) -> (i32, V3, f32) {
        self.groups[g]
    }

    /// The bodies of group `g`, in increasing order.
    pub fn bodies(&self, g: usize) -> &[u32] {
        &self.members[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// Whether a test of group `g` can leave anything out (a group of one body is its body).
    pub(super) fn worth_testing(&self, g: usize) -> bool {
        self.starts[g + 1] - self.starts[g] > 1
    }
}

/// A sphere in `frame` around the bounding spheres of `bodies` (all on that frame, not
/// empty; [`bound_of`], padded and rounded up, so every body's sphere lies inside it), or an
/// infinite radius where it is not finite.
fn enclosing_sphere(model: &CollisionModel, bodies: &[usize], frame: i32) -> (i32, V3, f32) {
    let (center, r, _, _) = bound_of(model, bodies);
    let r = if r.is_finite() && center.iter().all(|c| c.is_finite()) {
        r
    } else {
        f32::INFINITY
    };
    (frame, center, r)
}

/// The pairs [`frames_valid_fast`] visits, in blocks: (body, obstacle slot) pairs of one
/// group and one slot, and self pairs ([`CollisionModel::self_pairs`]) of one pair of groups
/// (see [`BodyGroups`]) in runs with the same first body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairList {
    pub(super) obstacle: Vec<(u32, u32)>,
    /// Per block: group, obstacle slot, end of the block in `obstacle`.
    pub(super) obstacle_blocks: Vec<(u32, u32, u32)>,
    /// Second bodies of the self pairs, run after run.
    pub(super) self_partners: Vec<u32>,
    /// Runs of self pairs with the same first body: that body and the end of the run in
    /// `self_partners`.
    pub(super) self_runs: Vec<(u32, u32)>,
    /// Per block: the two groups, end of the block in `self_runs`.
    pub(super) self_blocks: Vec<(u32, u32, u32)>,
}

impl PairList {
    /// Pairs in the list (obstacle and self pairs).
    pub fn len(&self) -> usize {
        self.obstacle.len() + self.self_partners.len()
    }

    /// Appends the self pair `(ia, ib)` to the block being built (after the last one closed
    /// by [`Self::close_self_block`]).
    fn push_self(&mut self, ia: u32, ib: u32) {
        let block_start = self.self_blocks.last().map_or(0, |b| b.2 as usize);
        self.self_partners.push(ib);
        let end = self.self_partners.len() as u32;
        let in_block = self.self_runs.len() > block_start;
        match self.self_runs.last_mut() {
            Some(run) if in_block && run.0 == ia => run.1 = end,
            _ => self.self_runs.push((ia, end)),
        }
    }

    /// Closes the block of self pairs of groups `ga` and `gb` (nothing when it is empty).
    fn close_self_block(&mut self, ga: u32, gb: u32) {
        let block_start = self.self_blocks.last().map_or(0, |b| b.2 as usize);
        if self.self_runs.len() > block_start {
            self.self_blocks.push((ga, gb, self.self_runs.len() as u32));
        }
    }

    /// No pair at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every pair the reference visits: each body with each obstacle slot that is not empty
    /// and of a known kind, and every self pair. `groups` must be [`BodyGroups::new`] of
    /// `model`.
    pub fn all(model: &CollisionModel, scene: &SceneModel, groups: &BodyGroups) -> Self {
        let mut l = PairList::default();
        for g in 0..groups.len() {
            for (slot, o) in scene.obstacles.iter().enumerate() {
                if o.kind > obstacle_kind::MESH {
                    continue;
                }
                for &bi in groups.bodies(g) {
                    if (bi as usize) < model.bodies.len() {
                        l.obstacle.push((bi, slot as u32));
                    }
                }
                l.obstacle_blocks
                    .push((g as u32, slot as u32, l.obstacle.len() as u32));
            }
        }
        let mut from = 0usize;
        for &(ga, gb, end) in &groups.self_buckets {
            for &k in &groups.self_order[from..end as usize] {
                if let Some(p) = model.self_pairs.get(k as usize) {
                    l.push_self(p[0], p[1]);
                }
            }
            from = end as usize;
            l.close_self_block(ga, gb);
        }
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
    /// non-negative number keeps every pair. Whole groups are left out first, by the same
    /// test on their spheres with the largest growth of their bodies (a body's sphere lies
    /// inside its group's: the group test fails whenever every body's would).
    ///
    /// `groups` must be [`BodyGroups::new`] of `model`; `scratch` is reusable space (no
    /// allocation once it has grown).
    #[allow(clippy::too_many_arguments)]
    pub fn for_motion_with(
        model: &CollisionModel,
        scene: &SceneModel,
        groups: &BodyGroups,
        frames: &[Xf],
        growth: &[f32],
        travel: &[f32],
        out: &mut PairList,
        scratch: &mut CullScratch,
    ) {
        out.obstacle.clear();
        out.obstacle_blocks.clear();
        out.self_partners.clear();
        out.self_runs.clear();
        out.self_blocks.clear();
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
        groups.growth(grow, &mut scratch.growth);
        group_spheres(groups, frames, &scratch.growth, &mut scratch.groups);
        let gs = &scratch.groups;
        for (g, &(gc, gr)) in gs.iter().enumerate() {
            for (slot, o) in scene.obstacles.iter().enumerate() {
                if o.kind > obstacle_kind::MESH {
                    continue;
                }
                if gr < f32::INFINITY && !sphere_near_obstacle(&gc, gr, o, m) {
                    continue;
                }
                let before = out.obstacle.len();
                for &bi in groups.bodies(g) {
                    let (Some(b), Some(&gb)) =
                        (model.bodies.get(bi as usize), grow.get(bi as usize))
                    else {
                        continue;
                    };
                    if gb == f32::INFINITY
                        || sphere_near_obstacle(&centers[bi as usize], b.radius + gb, o, m)
                    {
                        out.obstacle.push((bi, slot as u32));
                    }
                }
                if out.obstacle.len() > before {
                    out.obstacle_blocks
                        .push((g as u32, slot as u32, out.obstacle.len() as u32));
                }
            }
        }
        let mut from = 0usize;
        for &(ga, gb, end) in &groups.self_buckets {
            let bucket = &groups.self_order[from..end as usize];
            from = end as usize;
            let ((ca, ra), (cb, rb)) = (gs[ga as usize], gs[gb as usize]);
            let d = sub(&ca, &cb);
            let rr = ra + rb + m;
            if rr < f32::INFINITY && dot(&d, &d) > rr * rr {
                continue;
            }
            for &k in bucket {
                let Some(p) = model.self_pairs.get(k as usize) else {
                    continue;
                };
                let (ia, ib) = (p[0] as usize, p[1] as usize);
                let d = sub(&centers[ia], &centers[ib]);
                let rr =
                    model.bodies[ia].radius + model.bodies[ib].radius + m + grow[ia] + grow[ib];
                if rr == f32::INFINITY || dot(&d, &d) <= rr * rr {
                    out.push_self(p[0], p[1]);
                }
            }
            out.close_self_block(ga, gb);
        }
    }
}

/// Per group of `groups`: its sphere's world centre at `frames` and its radius grown by
/// `growth[g]` (see [`BodyGroups::growth`]); infinite (never left out) for a group of one
/// body or with an infinite growth.
fn group_spheres(groups: &BodyGroups, frames: &[Xf], growth: &[f32], out: &mut Vec<(V3, f32)>) {
    out.clear();
    for (g, &(frame, center, radius)) in groups.groups.iter().enumerate() {
        let r = radius + growth.get(g).copied().unwrap_or(f32::INFINITY);
        if !groups.worth_testing(g) || r.is_nan() || r == f32::INFINITY {
            out.push(([0.0; 3], f32::INFINITY));
            continue;
        }
        out.push((frame_of(frames, frame).apply(&center), r));
    }
}

/// Scratch space of [`PairList::for_motion_with`].
#[derive(Clone, Debug, Default)]
pub struct CullScratch {
    /// Per body: the growth its bounding sphere is tested with.
    grow: Vec<f32>,
    /// Per body: its bounding-sphere centre at the midpoint.
    centers: Vec<V3>,
    /// Per group: its sphere's centre at the midpoint and its grown radius.
    groups: Vec<(V3, f32)>,
    /// Per group: its growth ([`BodyGroups::growth`]).
    growth: Vec<f32>,
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
    /// World bounding-sphere centre per body (valid for bodies of groups with `group_done`).
    centers: Vec<V3>,
    /// Per group: its bodies' centres are computed for this configuration.
    group_done: Vec<bool>,
    /// Per group: its sphere's world centre and grown radius ([`group_spheres`]).
    groups: Vec<(V3, f32)>,
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

    /// Computes the bounding-sphere centres of group `g`'s bodies (once per configuration).
    #[inline(always)]
    fn group_centers(
        &mut self,
        model: &CollisionModel,
        groups: &BodyGroups,
        frames: &[Xf],
        g: usize,
    ) {
        if self.group_done[g] {
            return;
        }
        let xf = frame_of(frames, groups.groups[g].0);
        for &bi in groups.bodies(g) {
            if let Some(b) = model.bodies.get(bi as usize) {
                self.centers[bi as usize] = xf.apply(&b.center);
            }
        }
        self.group_done[g] = true;
    }
}

/// The verdict of [`frames_valid`](super::frames_valid) (see the module documentation),
/// visiting the pairs of `pairs` only: a [`PairList::all`] of `model` and `scene`, or a
/// [`PairList::for_motion_with`] of the motion the frames belong to, with growths at least
/// `sweep`'s whole sweeps. `groups` must be [`BodyGroups::new`] of `model` and
/// `group_growth` its [`BodyGroups::growth`] of [`Sweep::bodies`] (computed once for many
/// configurations).
#[allow(clippy::too_many_arguments)]
pub fn frames_valid_fast(
    model: &CollisionModel,
    scene: &SceneModel,
    groups: &BodyGroups,
    pairs: &PairList,
    frames: &[Xf],
    sweep: &Sweep,
    group_growth: &[f32],
    s: &mut FastScratch,
) -> bool {
    let m = model.margin;
    let nb = model.bodies.len();
    s.centers.resize(nb, [0.0; 3]);
    s.group_done.clear();
    s.group_done.resize(groups.len(), false);
    s.spheres_done.clear();
    s.spheres_done.resize(nb, false);
    s.sphere_centers.resize(model.spheres.len(), [0.0; 3]);
    group_spheres(groups, frames, group_growth, &mut s.groups);
    let mut from = 0usize;
    for &(g, slot, end) in &pairs.obstacle_blocks {
        let block = &pairs.obstacle[from..end as usize];
        from = end as usize;
        let (g, slot) = (g as usize, slot as usize);
        let (Some(&(gc, gr)), Some(o)) = (s.groups.get(g), scene.obstacles.get(slot)) else {
            continue;
        };
        if gr < f32::INFINITY && !sphere_near_obstacle(&gc, gr, o, m) {
            continue;
        }
        s.group_centers(model, groups, frames, g);
        for &(bi, _) in block {
            let bi = bi as usize;
            let Some(b) = model.bodies.get(bi) else {
                continue;
            };
            let e = sweep.body(bi);
            let bc = s.centers[bi];
            if !sphere_near_obstacle(&bc, b.radius + e, o, m) {
                continue;
            }
            let xf = frame_of(frames, b.frame);
            if b.inflate == 0.0 && b.sphere_count > 0 {
                let spheres = &model.spheres
                    [b.sphere_start as usize..(b.sphere_start + b.sphere_count) as usize];
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
    }
    let mut runs_from = 0usize;
    for &(ga, gb, runs_end) in &pairs.self_blocks {
        let runs = &pairs.self_runs[runs_from..runs_end as usize];
        let mut from = pairs.self_runs[..runs_from]
            .last()
            .map_or(0, |r| r.1 as usize);
        runs_from = runs_end as usize;
        let (ga, gb) = (ga as usize, gb as usize);
        let (Some(&(ca, ra)), Some(&(cb, rb))) = (s.groups.get(ga), s.groups.get(gb)) else {
            continue;
        };
        let d = sub(&ca, &cb);
        let rr = ra + rb + m;
        if rr < f32::INFINITY && dot(&d, &d) > rr * rr {
            continue;
        }
        s.group_centers(model, groups, frames, ga);
        s.group_centers(model, groups, frames, gb);
        // Every pair of the block is between these two groups' frames: one column of growths.
        let col = sweep.column(groups.sphere(ga).0, groups.sphere(gb).0);
        for &(ia, end) in runs {
            let partners = &pairs.self_partners[from..end as usize];
            from = end as usize;
            let ia = ia as usize;
            let Some(ba) = model.bodies.get(ia) else {
                continue;
            };
            // Body `ia` (grown by its whole sweep, no less than its growth in any of its self
            // pairs) against group `gb`'s sphere: when that fails, so does its test with every
            // body of the group. A growth that is not finite and non-negative keeps it.
            let ea = sweep.body(ia);
            let d = sub(&s.centers[ia], &cb);
            let rr = ba.radius + ea + rb + m;
            if rr < f32::INFINITY && ea >= 0.0 && dot(&d, &d) > rr * rr {
                continue;
            }
            // Its growth in its pairs with this block (the same for every partner).
            let ea = sweep.side(ia, col);
            for &ib in partners {
                let ib = ib as usize;
                let Some(bb) = model.bodies.get(ib) else {
                    continue;
                };
                let eb = sweep.side(ib, col);
                let d = sub(&s.centers[ia], &s.centers[ib]);
                let rr = ba.radius + bb.radius + m + ea + eb;
                if dot(&d, &d) > rr * rr {
                    continue;
                }
                let xa = frame_of(frames, ba.frame);
                let xb = frame_of(frames, bb.frame);
                s.covering(model, ia, &xa);
                s.covering(model, ib, &xb);
                let sa = &model.spheres
                    [ba.sphere_start as usize..(ba.sphere_start + ba.sphere_count) as usize];
                let sb = &model.spheres
                    [bb.sphere_start as usize..(bb.sphere_start + bb.sphere_count) as usize];
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
        }
    }
    true
}
