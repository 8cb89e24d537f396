//! How far the bodies may move between two checked configurations of a motion: the growths
//! of the swept checks.
//!
//! A motion is checked at `n + 1` configurations; every body is grown by half the distance
//! its points can travel over one segment ([`body_sweep`]), so a configuration that passes
//! grown stands for the half segments on both sides of it.
//!
//! # Self pairs: the relative sweep
//! The joints at or above the lowest frame that two bodies both hang from (their lowest
//! common ancestor `c` in the kinematic tree) move the two bodies together, as one rigid
//! body: they do not change any distance between them. Seen from frame `c`, body `a` moves
//! only by the joints strictly below `c` on its own chain, so the self pair `(a, b)` is grown
//! by `a`'s and `b`'s sweeps over those joints alone ([`Sweep::pair`]). Both bodies are at
//! the same checked end of the segment (the nearer one), so the pair's distance over the
//! segment is within the sum of the two growths of its distance at a checked configuration,
//! as for the world sweep. On a serial arm the upper body of a pair on an earlier link is not
//! grown at all, and the lower one only by the joints between the two links: the swept check
//! of a valid motion near the hand passes far more often than with the world sweeps.
//!
//! # The sums, and what every backend repeats
//! Per body, the joint terms `|mult| * (|diff[k]| / n) * reach` are added from the last frame
//! to the first (`acc = acc + term`, f32, no fused multiply-add). The sum after the frames
//! strictly below `c` is the sweep below `c` (times 0.5); after every frame it is the whole
//! sweep. So the sweep below `c` is a partial sum of the whole one: f32 addition of
//! non-negative terms never decreases, hence `below <= whole`, and a culling test made with
//! the whole sweeps keeps every pair that the relative growth keeps. A finer level (more
//! segments) has no larger terms, so no larger growths either (the monotonicity the motion
//! checks rely on). `gmp_body_sweep_below` and `gmp_frame_lca` in `kernels/common.cuh` are
//! the GPU twins.

use super::model::CollisionModel;

/// The lowest frame that frames `fa` and `fb` both hang from (a frame hangs from itself), or
/// `-1` (the root link) when there is none. Frames are in topological order: a parent comes
/// before its children, so of two different frames the later one is never the other's
/// ancestor and steps up to its parent. A parent index that does not come first (a malformed
/// model) gives `-1`: no relative growth, the whole sweeps.
pub fn frame_lca(model: &CollisionModel, fa: i32, fb: i32) -> i32 {
    let (mut a, mut b) = (fa, fb);
    while a != b {
        let deeper = if a > b { &mut a } else { &mut b };
        let up = model.frames.get(*deeper as usize).map_or(-1, |f| f.parent);
        if up >= *deeper {
            return -1;
        }
        *deeper = up.max(-1);
    }
    a
}

/// Half the distance any point of body `b` can travel between two consecutive checked
/// configurations of a motion whose group joints change by `diff` over `segments` segments
/// (twin: `gmp_body_sweep`). Each joint moves by `|diff| / segments` per segment and moves a
/// body point at most that much times its reach ([`CollisionModel::reach`]); along a straight
/// joint-space segment every intermediate pose of the body is within half the sum of those
/// distances of one of the two checked poses. The terms are added last frame first (see the
/// module documentation).
#[inline]
pub fn body_sweep(model: &CollisionModel, b: usize, diff: &[f32], segments: u32) -> f32 {
    body_sweep_below(model, b, -1, diff, segments)
}

/// [`body_sweep`] over the joints of the frames after `c` only (`c = -1`: every joint; twin:
/// `gmp_body_sweep_below`). For a frame `c` that body `b` hangs from, these are the joints
/// that move `b` relative to `c`.
#[inline]
pub fn body_sweep_below(
    model: &CollisionModel,
    b: usize,
    c: i32,
    diff: &[f32],
    segments: u32,
) -> f32 {
    let nf = model.frames.len();
    let n = segments as f32;
    let from = (c + 1).max(0) as usize;
    let mut acc = 0.0f32;
    for f in (from..nf).rev() {
        acc += term(model, b, f, diff, n);
    }
    0.5 * acc
}

/// Frame `f`'s term of body `b`'s sweep (0 for a joint outside the planning group).
#[inline(always)]
fn term(model: &CollisionModel, b: usize, f: usize, diff: &[f32], n: f32) -> f32 {
    weight(model, f, diff, n).map_or(0.0, |w| w * reach(model, b, f))
}

/// Frame `f`'s joint step per segment times its multiplier, `|mult| * (|diff[k]| / n)`, or
/// `None` for a joint outside the planning group (no term).
#[inline(always)]
fn weight(model: &CollisionModel, f: usize, diff: &[f32], n: f32) -> Option<f32> {
    let fr = &model.frames[f];
    let k = model.var_group.get(fr.var as usize).copied().unwrap_or(-1);
    if k < 0 {
        return None;
    }
    let step = diff.get(k as usize).map_or(f32::NAN, |d| d.abs()) / n;
    Some(fr.mult.abs() * step)
}

/// [`CollisionModel::reach`] of body `b` and frame `f` (NaN where the table has none).
#[inline(always)]
fn reach(model: &CollisionModel, b: usize, f: usize) -> f32 {
    model
        .reach
        .get(b * model.frames.len() + f)
        .copied()
        .unwrap_or(f32::NAN)
}

/// The growths of one swept check: per body its whole sweep (obstacle tests), and per self
/// pair the two bodies' sweeps relative to the frame they both hang from (see the module
/// documentation). The default grows nothing.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Per body: its whole sweep (empty: no growth).
    body: Vec<f32>,
    /// `stride` columns of one value per body: column `c + 1` (values `(c + 1) * bodies ..`)
    /// the bodies' sweeps below frame `c` (column 0 the whole
    /// sweep). Empty: a pair is grown by the bodies' whole sweeps ([`Sweep::per_body`]).
    below: Vec<f32>,
    /// Frames + 1.
    stride: usize,
    /// Bodies (the length of a column of `below`).
    bodies: usize,
    /// Per pair of frames (`(fa + 1) * stride + fb + 1`): [`frame_lca`] + 1.
    lca: Vec<u16>,
    /// The parents the `lca` table was made for.
    parents: Vec<i32>,
    /// Scratch of [`Self::set`]: per frame, its `weight`.
    weights: Vec<Option<f32>>,
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep::none()
    }
}

/// No growth, for checks that take a [`Sweep`].
pub static NO_SWEEP: Sweep = Sweep::none();

impl Sweep {
    /// No growth.
    pub const fn none() -> Sweep {
        Sweep {
            body: Vec::new(),
            below: Vec::new(),
            stride: 0,
            bodies: 0,
            lca: Vec::new(),
            parents: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// The growths of the swept checks of a motion changing the group joints by `diff` over
    /// `segments` segments (as [`Sweep::set`]).
    pub fn of_motion(model: &CollisionModel, diff: &[f32], segments: u32) -> Sweep {
        let mut s = Sweep::none();
        s.set(model, diff, segments);
        s
    }

    /// Every body grown by `body[b]`, self pairs too (no relative growth): for growths that do
    /// not come from a motion.
    pub fn per_body(body: Vec<f32>) -> Sweep {
        Sweep {
            body,
            ..Sweep::none()
        }
    }

    /// Makes this the growths of a motion changing the group joints by `diff` over `segments`
    /// segments: per body [`body_sweep`], per body and frame [`body_sweep_below`] (the same
    /// values, computed in one pass per body).
    pub fn set(&mut self, model: &CollisionModel, diff: &[f32], segments: u32) {
        let (nb, nf) = (model.bodies.len(), model.frames.len());
        let stride = nf + 1;
        if self.stride != stride
            || self.parents.len() != nf
            || self
                .parents
                .iter()
                .zip(&model.frames)
                .any(|(&p, f)| p != f.parent)
        {
            self.stride = stride;
            self.parents = model.frames.iter().map(|f| f.parent).collect();
            self.lca = (0..stride * stride)
                .map(|k| {
                    let (fa, fb) = ((k / stride) as i32 - 1, (k % stride) as i32 - 1);
                    (frame_lca(model, fa, fb) + 1) as u16
                })
                .collect();
        }
        let n = segments as f32;
        // The terms as `term` makes them: the weights once per frame; then frame by frame
        // (last first), every body's sum (independent sums side by side).
        self.weights.clear();
        self.weights
            .extend((0..nf).map(|f| weight(model, f, diff, n)));
        self.bodies = nb;
        self.body.clear();
        self.body.resize(nb, 0.0);
        self.below.resize(nb * stride, 0.0);
        let acc = &mut self.body;
        let whole = nb > 0 && model.reach.len() >= nb * nf;
        let by_frame = whole && model.reach_by_frame.len() == nb * nf;
        for f in (0..nf).rev() {
            // Column f + 1: the frames after f.
            let col = &mut self.below[(f + 1) * nb..(f + 2) * nb];
            for (c, a) in col.iter_mut().zip(acc.iter()) {
                *c = 0.5 * *a;
            }
            let Some(w) = self.weights[f] else {
                continue;
            };
            if by_frame {
                for (a, r) in acc
                    .iter_mut()
                    .zip(&model.reach_by_frame[f * nb..(f + 1) * nb])
                {
                    *a += w * r;
                }
            } else if whole {
                for (a, r) in acc.iter_mut().zip(model.reach[f..].iter().step_by(nf)) {
                    *a += w * r;
                }
            } else {
                for (b, a) in acc.iter_mut().enumerate() {
                    *a += w * reach(model, b, f);
                }
            }
        }
        for (c, a) in self.below[..nb].iter_mut().zip(acc.iter_mut()) {
            *a *= 0.5;
            *c = *a;
        }
    }

    /// No body is grown.
    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }

    /// Per body, its whole sweep (empty: no growth).
    pub fn bodies(&self) -> &[f32] {
        &self.body
    }

    /// Body `b`'s whole sweep (0 without growth).
    #[inline(always)]
    pub fn body(&self, b: usize) -> f32 {
        self.body.get(b).copied().unwrap_or(0.0)
    }

    /// The growths of self pair `(a, b)`, in that order: each body's sweep below the frame
    /// both hang from (see the module documentation); each at most the body's whole sweep.
    #[inline(always)]
    pub fn pair(&self, model: &CollisionModel, a: usize, b: usize) -> (f32, f32) {
        let frame = |x: usize| model.bodies.get(x).map_or(-1, |b| b.frame);
        self.pair_at(a, b, self.column(frame(a), frame(b)))
    }

    /// The column of [`Self::pair_at`] for bodies on frames `fa` and `fb` (the same for every
    /// pair of bodies on those two frames).
    #[inline(always)]
    pub fn column(&self, fa: i32, fb: i32) -> usize {
        let s = self.stride;
        // Frame + 1 (0: the root link, or a frame this table does not know).
        let slot = |f: i32| usize::try_from(f + 1).ok().filter(|&x| x < s).unwrap_or(0);
        self.lca
            .get(slot(fa) * s + slot(fb))
            .map_or(0, |&c| c as usize)
    }

    /// [`Self::pair`] of bodies `a` and `b` with `col` their frames' [`Self::column`].
    #[inline(always)]
    pub fn pair_at(&self, a: usize, b: usize, col: usize) -> (f32, f32) {
        (self.side(a, col), self.side(b, col))
    }

    /// The growth of body `x` in a self pair whose frames' [`Self::column`] is `col` (one
    /// half of [`Self::pair_at`]).
    #[inline(always)]
    pub fn side(&self, x: usize, col: usize) -> f32 {
        if self.below.is_empty() || x >= self.bodies {
            return self.body(x);
        }
        self.below
            .get(col * self.bodies + x)
            .copied()
            .unwrap_or_else(|| self.body(x))
    }
}
