//! The CPU backend: the reference every other backend is held to.

use super::detmath::{axis_angle, dot, sub, Xf, V3};
use super::fast::{
    frame_poses_fast, frames_valid_fast, motion_travel, BodyGroups, CullScratch, FastScratch,
    PairList,
};
use super::gjk::{separated, ShapeRef};
use super::lanes::{self, first_lanes, Isa, LaneScratch, Lanes, Need, LANES};
use super::model::{
    obstacle_kind, BodyModel, CollisionModel, ObstacleModel, RobotShapes, SceneModel,
    DEFAULT_MARGIN,
};
use super::sweep::{Sweep, NO_SWEEP};
use super::{Backend, Checker, CollisionError, ConfigBatch, MotionBatch};
use crate::robot::{JointSpace, PlanningGroup, RobotModel};
use crate::scene::Scene;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Options of a checker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckerOptions {
    /// Which geometry stands for the robot.
    pub shapes: RobotShapes,
    /// Safety margin (m): closer than this counts as touching.
    pub margin: f32,
    /// Worker threads for large batches (0 = all cores).
    pub threads: usize,
}

impl Default for CheckerOptions {
    fn default() -> Self {
        Self {
            shapes: RobotShapes::Polytopes,
            margin: DEFAULT_MARGIN,
            threads: 0,
        }
    }
}

/// Scratch space for one configuration check.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    state: Vec<f32>,
    frames: Vec<Xf>,
    sweep: Sweep,
    /// Per body group: its growth with the bodies grown by `sweep` ([`BodyGroups::growth`]).
    group_sweep: Vec<f32>,
    /// Per checked configuration of the current refinement level: passed its swept check.
    passed: Vec<bool>,
    /// The same for the previous level.
    passed_before: Vec<bool>,
    /// Scratch of [`frames_valid_fast`].
    fast: FastScratch,
    /// Per piece of the motion being checked ([`MOTION_PIECES`]): the pairs its
    /// configurations visit, and whether they are culled yet.
    pieces: Vec<(PairList, bool)>,
    /// Per body: how far its points can move over a piece of the motion being checked.
    travel: Vec<f32>,
    /// Queue of the [`Bisection`] walk of the motion being checked.
    bisect_queue: Vec<(u32, u32)>,
    /// Scratch of [`PairList::for_motion_with`].
    cull: CullScratch,
    /// Scratch of the eight-lane checks ([`lanes`]).
    lane: LaneScratch,
}

/// How one refinement level of a motion check ended ([`CpuChecker::motion_valid`]).
enum LevelEnd {
    /// Every configuration of the level passed its swept check: the motion is valid.
    Passed,
    /// A configuration is in collision: the motion is not valid.
    Collides,
    /// This configuration failed its swept check only: refine around it.
    FailedAt(u32),
}

/// The outcome of checking one motion at its checked configurations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MotionStatus {
    /// Every checked configuration is free with the bodies grown by their sweep between
    /// checked configurations: the whole straight-line motion is free.
    #[default]
    Valid,
    /// A checked configuration is in collision.
    Collides,
    /// Every checked configuration is free, but not with the sweep margin: check again with
    /// more segments.
    Uncertain,
}

/// A motion check culls the pairs ([`PairList::for_motion_with`]) for each of this many equal
/// pieces of the motion on its own, when it first visits a configuration there (see
/// [`CULL_MIN_CONFIGS`]; a power of two: the pieces' midpoints and travel bounds are then
/// exact in f32). Eight rather than four: shorter pieces keep fewer pairs, which saved about
/// 15 % of the MBM Panda and UR5 checking time on the dev box; sixteen saved nothing more.
pub const MOTION_PIECES: u32 = 8;

/// A piece of a motion is culled only when a level visits at least this many of its
/// configurations: culling costs a forward kinematics and a bounding-sphere test of every
/// pair, about what it saves on two configurations (a piece with fewer is checked against
/// every pair, which gives the same verdicts).
pub const CULL_MIN_CONFIGS: u64 = 3;

/// Configurations `s` in `0..=segments` that lie in piece `k` of [`MOTION_PIECES`]
/// (`min(s P / segments, P - 1) == k`, as [`CpuChecker::motion_valid`] assigns them).
pub fn piece_configs(segments: u32, k: usize) -> u64 {
    let (n, p, k) = (u64::from(segments), u64::from(MOTION_PIECES), k as u64);
    if n == 0 || k >= p {
        return u64::from(n == 0 && k == 0);
    }
    let lo = (k * n).div_ceil(p);
    let hi = if k + 1 == p {
        n
    } else {
        ((k + 1) * n).div_ceil(p) - 1
    };
    (hi + 1).saturating_sub(lo)
}

/// Each refinement cuts the uncertain motions' segments into this many parts. Halving (with
/// [`MAX_REFINEMENTS`] 6, finest level 64 times the segments as with quartering 3 times) asks
/// for fewer configurations: most motions uncertain at their first level pass at twice its
/// segments (measured in `results/mbm/refine_halving_lanes_devbox_2026-11-22/`).
pub const REFINE_FACTOR: u32 = 2;
/// Refinements before an uncertain motion is reported in collision.
pub const MAX_REFINEMENTS: u32 = 6;

/// Turns motion statuses into verdicts, re-checking uncertain motions with
/// [`REFINE_FACTOR`] times more segments (and so a smaller sweep) up to [`MAX_REFINEMENTS`]
/// times; a motion still uncertain after that is reported in collision (conservative).
/// `eval` checks a batch of prepared motions on a backend.
pub fn refine_motions<F>(p: &PreparedMotions, eval: F) -> Result<Vec<bool>, CollisionError>
where
    F: FnMut(&PreparedMotions) -> Result<Vec<MotionStatus>, CollisionError>,
{
    refine_motions_up_to(p, MAX_REFINEMENTS, eval)
}

/// [`refine_motions`] with at most `max_refinements` refinements (at most
/// [`MAX_REFINEMENTS`]): a motion uncertain after them is reported in collision.
pub fn refine_motions_up_to<F>(
    p: &PreparedMotions,
    max_refinements: u32,
    mut eval: F,
) -> Result<Vec<bool>, CollisionError>
where
    F: FnMut(&PreparedMotions) -> Result<Vec<MotionStatus>, CollisionError>,
{
    let mut status = eval(p)?;
    let n = p.segments.len();
    let dof = p.start.len().checked_div(n).unwrap_or(0);
    // The motions still uncertain (only they can be again) and their current segment counts.
    let mut pending: Vec<(usize, u32)> = (0..n)
        .filter(|&i| status[i] == MotionStatus::Uncertain)
        .map(|i| (i, p.segments[i]))
        .collect();
    for _ in 0..max_refinements.min(MAX_REFINEMENTS) {
        let mut sub = PreparedMotions::default();
        pending.retain_mut(|(i, seg)| {
            let Some(finer) = seg.checked_mul(REFINE_FACTOR).filter(|&s| s < (1 << 24)) else {
                return false;
            };
            *seg = finer;
            let i = *i;
            sub.start
                .extend_from_slice(&p.start[i * dof..(i + 1) * dof]);
            sub.diff.extend_from_slice(&p.diff[i * dof..(i + 1) * dof]);
            sub.segments.push(finer);
            true
        });
        if pending.is_empty() {
            break;
        }
        let refined = eval(&sub)?;
        if refined.len() != pending.len() {
            return Err(CollisionError::Backend {
                backend: "refinement".into(),
                message: format!(
                    "{} statuses for {} refined motions",
                    refined.len(),
                    pending.len()
                ),
            });
        }
        for (&(i, _), &r) in pending.iter().zip(&refined) {
            status[i] = r;
        }
        pending.retain(|&(i, _)| status[i] == MotionStatus::Uncertain);
    }
    Ok(status.iter().map(|&s| s == MotionStatus::Valid).collect())
}

/// Forward kinematics of the moving frames for a full f32 state (twin: `gmp_fk`).
#[inline]
pub fn frame_poses(model: &CollisionModel, state: &[f32], out: &mut Vec<Xf>) {
    out.clear();
    for f in &model.frames {
        let q = f.mult * state[f.var as usize] + f.offset;
        let local = if f.kind == 0 {
            Xf {
                r: axis_angle(&f.axis, q),
                t: [0.0; 3],
            }
        } else {
            Xf {
                r: Xf::IDENTITY.r,
                t: [f.axis[0] * q, f.axis[1] * q, f.axis[2] * q],
            }
        };
        let joint = f.origin.mul(&local);
        let world = if f.parent < 0 {
            joint
        } else {
            out[f.parent as usize].mul(&joint)
        };
        out.push(world);
    }
}

#[inline(always)]
pub(super) fn frame_of(frames: &[Xf], f: i32) -> Xf {
    if f < 0 {
        Xf::IDENTITY
    } else {
        frames[f as usize]
    }
}

/// Conservative sphere-vs-obstacle proximity: `false` only when the sphere `(c, r)` is
/// farther than `margin` from the obstacle (exact for box, sphere and cylinder; bounding
/// sphere for meshes).
#[inline(always)]
pub fn sphere_near_obstacle(c: &V3, r: f32, o: &ObstacleModel, margin: f32) -> bool {
    let reach = r + margin;
    match o.kind {
        obstacle_kind::BOX => {
            let q = o.pose.apply_inv(c);
            let ex = (q[0].abs() - o.params[0]).max(0.0);
            let ey = (q[1].abs() - o.params[1]).max(0.0);
            let ez = (q[2].abs() - o.params[2]).max(0.0);
            ex * ex + ey * ey + ez * ez <= reach * reach
        }
        obstacle_kind::CYLINDER => {
            let q = o.pose.apply_inv(c);
            let rad = (q[0] * q[0] + q[1] * q[1]).sqrt();
            let er = (rad - o.params[0]).max(0.0);
            let ez = (q[2].abs() - o.params[1]).max(0.0);
            er * er + ez * ez <= reach * reach
        }
        obstacle_kind::SPHERE | obstacle_kind::MESH => {
            let d = sub(c, &o.center);
            let rr = reach + o.radius;
            dot(&d, &d) <= rr * rr
        }
        _ => false,
    }
}

pub(super) fn obstacle_shape<'a>(o: &ObstacleModel, scene: &'a SceneModel) -> ShapeRef<'a> {
    match o.kind {
        obstacle_kind::BOX => ShapeRef::Box {
            xf: o.pose,
            h: o.params,
        },
        obstacle_kind::CYLINDER => ShapeRef::Cylinder {
            xf: o.pose,
            r: o.params[0],
            hz: o.params[1],
        },
        obstacle_kind::SPHERE => ShapeRef::Point { c: o.pose.t },
        _ => ShapeRef::Poly {
            xf: o.pose,
            verts: &scene.mesh_verts,
            offsets: &scene.mesh_edge_offsets,
            targets: &scene.mesh_edge_targets,
        },
    }
}

/// Validity of one full f32 state (twin: `gmp_config_valid`). `true` = collision free.
pub fn config_valid(
    model: &CollisionModel,
    scene: &SceneModel,
    state: &[f32],
    frames: &mut Vec<Xf>,
) -> bool {
    frame_poses(model, state, frames);
    frames_valid(model, scene, frames, &NO_SWEEP)
}

/// [`config_valid`] after [`frame_poses`], with the bodies grown by `sweep`: each body by its
/// whole sweep against the obstacles, the two bodies of a self pair by their [`Sweep::pair`].
pub fn frames_valid(
    model: &CollisionModel,
    scene: &SceneModel,
    frames: &[Xf],
    sweep: &Sweep,
) -> bool {
    visit_hits(model, scene, frames, sweep, |_| true)
}

/// A pair in collision found by [`frames_hits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// Body `body` (an index into [`CollisionModel::bodies`]) and the obstacle in slot
    /// `obstacle` of the scene.
    Obstacle {
        /// The body.
        body: usize,
        /// The obstacle's slot.
        obstacle: usize,
    },
    /// Two bodies of a self pair.
    SelfPair {
        /// The first body.
        a: usize,
        /// The second body.
        b: usize,
    },
}

/// Every pair that [`frames_valid`] (without sweep) finds in collision, bodies against
/// obstacles first: what makes a configuration invalid, for error messages. Empty exactly when
/// the configuration is free.
pub fn frames_hits(model: &CollisionModel, scene: &SceneModel, frames: &[Xf]) -> Vec<Hit> {
    let mut hits = Vec::new();
    visit_hits(model, scene, frames, &NO_SWEEP, |h| {
        hits.push(h);
        false
    });
    hits
}

/// The tests of [`frames_valid`], calling `hit` for each pair in collision; stops, returning
/// `false`, at the first for which `hit` returns `true`. Returns `true` when nothing collides.
#[inline(always)]
fn visit_hits(
    model: &CollisionModel,
    scene: &SceneModel,
    frames: &[Xf],
    sweep: &Sweep,
    mut hit: impl FnMut(Hit) -> bool,
) -> bool {
    let mut free = true;
    let m = model.margin;
    for (bi, b) in model.bodies.iter().enumerate() {
        let e = sweep.body(bi);
        let xf = frame_of(frames, b.frame);
        let bc = xf.apply(&b.center);
        for (oi, o) in scene.obstacles.iter().enumerate() {
            if o.kind == obstacle_kind::NONE || !sphere_near_obstacle(&bc, b.radius + e, o, m) {
                continue;
            }
            if b.inflate == 0.0 && b.sphere_count > 0 {
                let mut near = false;
                for s in &model.spheres
                    [b.sphere_start as usize..(b.sphere_start + b.sphere_count) as usize]
                {
                    let c = xf.apply(&[s[0], s[1], s[2]]);
                    if sphere_near_obstacle(&c, s[3] + e, o, m) {
                        near = true;
                        break;
                    }
                }
                if !near {
                    continue;
                }
            }
            if !body_obstacle_narrow(model, scene, b, xf, &bc, e, o) {
                free = false;
                if hit(Hit::Obstacle {
                    body: bi,
                    obstacle: oi,
                }) {
                    return false;
                }
            }
        }
    }
    for p in &model.self_pairs {
        let ba = &model.bodies[p[0] as usize];
        let bb = &model.bodies[p[1] as usize];
        let (ea, eb) = sweep.pair(model, p[0] as usize, p[1] as usize);
        let xa = frame_of(frames, ba.frame);
        let xb = frame_of(frames, bb.frame);
        let ca = xa.apply(&ba.center);
        let cb = xb.apply(&bb.center);
        let d = sub(&ca, &cb);
        let rr = ba.radius + bb.radius + m + ea + eb;
        if dot(&d, &d) > rr * rr {
            continue;
        }
        let sa =
            &model.spheres[ba.sphere_start as usize..(ba.sphere_start + ba.sphere_count) as usize];
        let sb =
            &model.spheres[bb.sphere_start as usize..(bb.sphere_start + bb.sphere_count) as usize];
        let mut near = false;
        'outer: for s in sa {
            let c1 = xa.apply(&[s[0], s[1], s[2]]);
            for t in sb {
                let c2 = xb.apply(&[t[0], t[1], t[2]]);
                let d = sub(&c1, &c2);
                let rr = s[3] + t[3] + m + ea + eb;
                if dot(&d, &d) <= rr * rr {
                    near = true;
                    break 'outer;
                }
            }
        }
        if !near {
            continue;
        }
        if !self_pair_narrow(model, ba, bb, xa, xb, d, (ea, eb)) {
            free = false;
            if hit(Hit::SelfPair {
                a: p[0] as usize,
                b: p[1] as usize,
            }) {
                return false;
            }
        }
    }
    free
}

/// A body posed by `xf` (bounding centre `bc`, grown by `e`) against an obstacle that passed
/// the sphere tests of [`frames_valid`]: the rest of its obstacle test. `true` = free.
#[inline(always)]
pub(super) fn body_obstacle_narrow(
    model: &CollisionModel,
    scene: &SceneModel,
    b: &BodyModel,
    xf: Xf,
    bc: &V3,
    e: f32,
    o: &ObstacleModel,
) -> bool {
    if b.vert_count == 1 && o.kind != obstacle_kind::MESH {
        // A sphere body against a primitive: the distance test above was exact.
        return false;
    }
    let extra = if o.kind == obstacle_kind::SPHERE {
        o.params[0]
    } else {
        0.0
    };
    let mut ca = b.vert_start;
    let mut cb = o.mesh_start;
    let dir = sub(bc, &o.center);
    separated(
        &body_shape(model, xf),
        &obstacle_shape(o, scene),
        model.margin + b.inflate + e + extra,
        dir,
        &mut ca,
        &mut cb,
    )
}

/// A robot body's polytope posed by `xf` (a GJK shape).
#[inline(always)]
fn body_shape(model: &CollisionModel, xf: Xf) -> ShapeRef<'_> {
    ShapeRef::Poly {
        xf,
        verts: &model.verts,
        offsets: &model.edge_offsets,
        targets: &model.edge_targets,
    }
}

/// A self pair whose covering spheres passed the tests of [`frames_valid`]: the rest of its
/// test, with `d` the difference of the bounding centres. `true` = free.
#[inline(always)]
pub(super) fn self_pair_narrow(
    model: &CollisionModel,
    ba: &BodyModel,
    bb: &BodyModel,
    xa: Xf,
    xb: Xf,
    d: V3,
    grow: (f32, f32),
) -> bool {
    if ba.vert_count == 1 && bb.vert_count == 1 {
        return false;
    }
    let mut va = ba.vert_start;
    let mut vb = bb.vert_start;
    separated(
        &body_shape(model, xa),
        &body_shape(model, xb),
        model.margin + ba.inflate + bb.inflate + grow.0 + grow.1,
        d,
        &mut va,
        &mut vb,
    )
}

/// Per-motion data prepared on the host, shared by every backend: the f32 start, the f32
/// per-joint difference and the number of segments. Configuration `i` of the motion is
/// `start + diff * (i as f32 / segments as f32)`, joint by joint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreparedMotions {
    /// Row-major f32 start configurations.
    pub start: Vec<f32>,
    /// Row-major f32 differences (wrapped for continuous joints).
    pub diff: Vec<f32>,
    /// Segments per motion.
    pub segments: Vec<u32>,
}

/// Converts motions to the f32 form all backends interpolate from.
pub fn prepare_motions(
    space: &JointSpace,
    motions: &MotionBatch,
    resolution: f64,
) -> Result<PreparedMotions, CollisionError> {
    if !(resolution.is_finite() && resolution > 0.0) {
        return Err(CollisionError::BadResolution(resolution));
    }
    if motions.from.len() != motions.to.len() {
        return Err(CollisionError::MotionLengthMismatch {
            from: motions.from.len(),
            to: motions.to.len(),
        });
    }
    validate_batch(space, &motions.from)?;
    validate_batch(space, &motions.to)?;
    let n = motions.len();
    let dof = space.dof();
    let mut p = PreparedMotions {
        start: vec![0.0; n * dof],
        diff: vec![0.0; n * dof],
        segments: vec![0; n],
    };
    prepare_rows(
        space,
        motions,
        resolution,
        0,
        &mut p.start,
        &mut p.diff,
        &mut p.segments,
    );
    Ok(p)
}

/// Motions per piece of [`prepare_motions_parallel`].
const PREPARE_GRAIN: usize = 8192;

/// [`prepare_motions`] with the motions cut into pieces prepared on all cores (rayon's pool):
/// the same result, value for value. Batches of one piece or less are prepared on the calling
/// thread. For backends whose host side is the bottleneck of a large batch (the GPU's).
pub fn prepare_motions_parallel(
    space: &JointSpace,
    motions: &MotionBatch,
    resolution: f64,
) -> Result<PreparedMotions, CollisionError> {
    use rayon::prelude::*;
    let dof = space.dof();
    if motions.len() <= PREPARE_GRAIN || dof == 0 || motions.from.len() != motions.to.len() {
        return prepare_motions(space, motions, resolution);
    }
    if !(resolution.is_finite() && resolution > 0.0) {
        return Err(CollisionError::BadResolution(resolution));
    }
    // Finite everywhere (checked on all cores), or the sequential check names the first
    // offending value.
    let finite = |b: &ConfigBatch| b.values().par_iter().all(|v| v.is_finite());
    if motions.from.dof() != dof || !finite(&motions.from) || !finite(&motions.to) {
        validate_batch(space, &motions.from)?;
        validate_batch(space, &motions.to)?;
    }
    let n = motions.len();
    let mut p = PreparedMotions {
        start: vec![0.0; n * dof],
        diff: vec![0.0; n * dof],
        segments: vec![0; n],
    };
    p.start
        .par_chunks_mut(PREPARE_GRAIN * dof)
        .zip(p.diff.par_chunks_mut(PREPARE_GRAIN * dof))
        .zip(p.segments.par_chunks_mut(PREPARE_GRAIN))
        .enumerate()
        .for_each(|(c, ((start, diff), segments))| {
            prepare_rows(
                space,
                motions,
                resolution,
                c * PREPARE_GRAIN,
                start,
                diff,
                segments,
            );
        });
    Ok(p)
}

/// Prepares motions `first ..` of `motions` into `start`, `diff` (`dof` values per motion) and
/// `segments` (one per motion, as many as it holds).
fn prepare_rows(
    space: &JointSpace,
    motions: &MotionBatch,
    resolution: f64,
    first: usize,
    start: &mut [f32],
    diff: &mut [f32],
    segments: &mut [u32],
) {
    let dof = space.dof();
    let mut d = vec![0.0; dof];
    for (k, seg) in segments.iter_mut().enumerate() {
        let a = motions.from.row(first + k);
        let b = motions.to.row(first + k);
        space.difference(a, b, &mut d);
        for j in 0..dof {
            start[k * dof + j] = a[j] as f32;
            diff[k * dof + j] = d[j] as f32;
        }
        *seg = u32::try_from(space.segments(a, b, resolution)).unwrap_or(u32::MAX);
    }
}

/// Checks that a batch has the space's dof and only finite values.
pub fn validate_batch(space: &JointSpace, b: &ConfigBatch) -> Result<(), CollisionError> {
    if b.dof() != space.dof() {
        return Err(CollisionError::WrongDof {
            expected: space.dof(),
            got: b.dof(),
        });
    }
    for (i, row) in b.rows().enumerate() {
        for (j, v) in row.iter().enumerate() {
            if !v.is_finite() {
                return Err(CollisionError::NonFinite {
                    index: i,
                    joint: space.names[j].clone(),
                });
            }
        }
    }
    Ok(())
}

/// The order in which the CPU visits the configurations of a motion with `segments`
/// segments: both ends, then midpoints of ever finer halves (collisions are usually found
/// early). Every index in `0..=segments` appears exactly once.
pub fn bisection_order(segments: u32) -> Vec<u32> {
    let mut order = Vec::with_capacity(segments as usize + 1);
    let mut queue = Vec::new();
    let mut walk = Bisection::new(segments);
    while let Some(s) = walk.next(&mut queue) {
        order.push(s);
    }
    order
}

/// [`bisection_order`] produced lazily, one index at a time, with a caller's queue (no
/// allocation once the queue has grown): a motion check that stops at its first failing
/// configuration computes only the part of the order it visits. The queue holds the halves
/// still to split, breadth first; halves too short to have a midpoint are never queued
/// (they yield nothing).
#[derive(Clone, Copy, Debug)]
pub struct Bisection {
    segments: u32,
    /// Ends yielded so far (0, 1 or 2).
    ends: u8,
    /// Next half of the queue to split.
    head: usize,
}

impl Bisection {
    /// The walk over `0..=segments`.
    pub fn new(segments: u32) -> Self {
        Self {
            segments,
            ends: 0,
            head: 0,
        }
    }

    /// The next index, or `None` when every index was yielded. `queue` must be the same for
    /// every call of one walk (its contents on the first call do not matter).
    #[inline]
    pub fn next(&mut self, queue: &mut Vec<(u32, u32)>) -> Option<u32> {
        let n = self.segments;
        match self.ends {
            0 => {
                self.ends = 1;
                return Some(0);
            }
            1 => {
                self.ends = 2;
                queue.clear();
                self.head = 0;
                if n == 0 {
                    return None;
                }
                if n >= 2 {
                    queue.push((0, n));
                }
                return Some(n);
            }
            _ => {}
        }
        let &(lo, hi) = queue.get(self.head)?;
        self.head += 1;
        let mid = lo + (hi - lo) / 2;
        if mid - lo >= 2 {
            queue.push((lo, mid));
        }
        if hi - mid >= 2 {
            queue.push((mid, hi));
        }
        Some(mid)
    }
}

/// The CPU reference checker.
#[derive(Debug)]
pub struct CpuChecker {
    model: CollisionModel,
    scene: SceneModel,
    space: JointSpace,
    threads: usize,
    /// Configurations whose validity was computed (forward kinematics run), all threads.
    evaluated: AtomicU64,
    /// The bodies grouped by frame, for [`frames_valid_fast`] and [`PairList`].
    groups: BodyGroups,
    /// Per body group: its growth with no body grown ([`BodyGroups::growth`] of no sweep).
    rest_growth: Vec<f32>,
    /// Every pair: what a lone configuration visits in [`frames_valid_fast`].
    all_pairs: PairList,
    /// Where the model and scene are [`lanes::eligible`]: the instructions the checks run
    /// eight configurations at a time with ([`Isa::best`]).
    lanes: Option<Isa>,
    /// Scratch spaces reused by single-threaded checks: a call takes one (or a fresh one when
    /// every one is in use by another thread, such as parallel planning attempts sharing the
    /// checker) and puts it back when done.
    scratch: Mutex<Vec<Scratch>>,
    /// Link and obstacle names (for [`Checker::contacts`]).
    names: ContactNames,
}

impl Clone for CpuChecker {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            scene: self.scene.clone(),
            space: self.space.clone(),
            threads: self.threads,
            evaluated: AtomicU64::new(self.evaluated.load(Ordering::Relaxed)),
            groups: self.groups.clone(),
            rest_growth: self.rest_growth.clone(),
            all_pairs: self.all_pairs.clone(),
            lanes: self.lanes,
            scratch: Mutex::new(Vec::new()),
            names: self.names.clone(),
        }
    }
}

/// What [`Checker::contacts`] names: the link of each body of a model and the obstacle of
/// each scene slot. Shared by the CPU reference and the CUDA backend, whose verdicts are the
/// reference's, so that both name the pairs from the reference's own tests.
#[derive(Debug, Clone)]
pub(crate) struct ContactNames {
    /// The link name of each body.
    body_links: Vec<String>,
    /// The obstacle id of each scene slot, `None` where free.
    obstacle_ids: Vec<Option<String>>,
}

impl ContactNames {
    /// The names for `model` (built from `robot`) in `scene`.
    pub(crate) fn new(robot: &RobotModel, model: &CollisionModel, scene: &Scene) -> Self {
        let body_links = model
            .bodies
            .iter()
            .map(|b| {
                robot
                    .tree
                    .links
                    .get(b.link as usize)
                    .map_or_else(|| format!("link {}", b.link), |l| l.name.clone())
            })
            .collect();
        let mut names = Self {
            body_links,
            obstacle_ids: Vec::new(),
        };
        names.sync(scene);
        names
    }

    /// Follows the obstacles of `scene` (after a scene update of the checker).
    pub(crate) fn sync(&mut self, scene: &Scene) {
        self.obstacle_ids = scene
            .slots()
            .iter()
            .map(|o| o.as_ref().map(|o| o.id.clone()))
            .collect();
    }

    /// The pairs in contact at group configuration `q` of `model` in `scene` (see
    /// [`Checker::contacts`]); `None` when `q` has the wrong length.
    pub(crate) fn contacts(
        &self,
        model: &CollisionModel,
        scene: &SceneModel,
        q: &[f64],
    ) -> Option<Vec<String>> {
        if q.len() != model.group_vars.len() {
            return None;
        }
        let mut state = model.base_state.clone();
        for (k, &v) in q.iter().enumerate() {
            if let Some(slot) = state.get_mut(model.group_vars[k] as usize) {
                *slot = v as f32;
            }
        }
        let mut frames = Vec::new();
        frame_poses(model, &state, &mut frames);
        let link = |b: usize| self.body_links.get(b).map_or("?", String::as_str);
        let mut out: Vec<String> = Vec::new();
        for h in frames_hits(model, scene, &frames) {
            let line = match h {
                Hit::Obstacle { body, obstacle } => format!(
                    "'{}' with obstacle '{}'",
                    link(body),
                    self.obstacle_ids
                        .get(obstacle)
                        .and_then(Option::as_deref)
                        .unwrap_or("?")
                ),
                Hit::SelfPair { a, b } => format!("'{}' with '{}'", link(a), link(b)),
            };
            if !out.contains(&line) {
                out.push(line);
            }
        }
        Some(out)
    }
}

impl CpuChecker {
    /// Builds a checker for `group` of `robot` in `scene`; `base_state` (a full state) supplies
    /// the joints outside the group.
    pub fn new(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        scene: &Scene,
        opts: CheckerOptions,
    ) -> Result<Self, CollisionError> {
        let model = CollisionModel::build(robot, group, base_state, opts.shapes, opts.margin)
            .map_err(|message| CollisionError::Backend {
                backend: "cpu".into(),
                message,
            })?;
        let threads = if opts.threads == 0 {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        } else {
            opts.threads
        };
        let names = ContactNames::new(robot, &model, scene);
        let scene = SceneModel::build(scene);
        let groups = BodyGroups::new(&model);
        let mut rest_growth = Vec::new();
        groups.growth(&[], &mut rest_growth);
        Ok(Self {
            all_pairs: PairList::all(&model, &scene, &groups),
            lanes: lanes::best_for(&model, &scene),
            groups,
            rest_growth,
            model,
            scene,
            space: group.space.clone(),
            threads,
            evaluated: AtomicU64::new(0),
            scratch: Mutex::new(Vec::new()),
            names,
        })
    }

    /// The compiled robot model.
    pub fn model(&self) -> &CollisionModel {
        &self.model
    }

    /// The compiled scene.
    pub fn scene_model(&self) -> &SceneModel {
        &self.scene
    }

    /// Brings the obstacles up to date with `scene` (only changed slots are recompiled).
    pub fn sync_scene(&mut self, scene: &Scene) -> Vec<usize> {
        let changed = self.scene.sync(scene);
        self.names.sync(scene);
        self.all_pairs = PairList::all(&self.model, &self.scene, &self.groups);
        self.lanes = lanes::best_for(&self.model, &self.scene);
        changed
    }

    /// Replaces the full state that supplies the joints outside the group.
    pub fn set_base_state(&mut self, base_state: &[f64]) -> Result<(), CollisionError> {
        self.model.set_base_state(base_state)?;
        Ok(())
    }

    fn fill_state(&self, q: impl Iterator<Item = f32>, scratch: &mut Scratch) {
        scratch.state.clear();
        scratch.state.extend_from_slice(&self.model.base_state);
        for (k, v) in q.enumerate() {
            scratch.state[self.model.group_vars[k] as usize] = v;
        }
    }

    /// Validity of one group configuration given in f32 (the verdict of [`config_valid`],
    /// computed by [`frames_valid_fast`]).
    pub fn config_valid_f32(&self, q: &[f32], scratch: &mut Scratch) -> bool {
        self.fill_state(q.iter().copied(), scratch);
        frame_poses_fast(&self.model, &scratch.state, &mut scratch.frames);
        self.frames_valid(scratch, false, None)
    }

    /// The eight-lane checks of this checker, where its model and scene are
    /// [`lanes::eligible`].
    fn lanes(&self) -> Option<Lanes<'_>> {
        self.lanes.map(|isa| Lanes {
            model: &self.model,
            scene: &self.scene,
            groups: &self.groups,
            rest_growth: &self.rest_growth,
            isa,
        })
    }

    /// Chooses the instructions of the eight-lane checks (tests compare them); `None` checks
    /// one configuration at a time. Ignored where the model and scene are not
    /// [`lanes::eligible`].
    pub fn set_lanes(&mut self, isa: Option<Isa>) {
        self.lanes = isa.filter(|_| lanes::eligible(&self.model, &self.scene));
    }

    /// The instructions of the eight-lane checks, `None` where configurations are checked one
    /// at a time.
    pub fn lane_isa(&self) -> Option<Isa> {
        self.lanes
    }

    /// [`frames_valid_fast`] on the frames in `scratch`, grown by `scratch.sweep` when `swept`,
    /// visiting the pairs of `piece` of the motion being checked (`scratch.pieces`), or all.
    #[inline]
    fn frames_valid(&self, scratch: &mut Scratch, swept: bool, piece: Option<usize>) -> bool {
        let (sweep, growth): (&Sweep, &[f32]) = if swept {
            (&scratch.sweep, &scratch.group_sweep)
        } else {
            (&NO_SWEEP, &self.rest_growth)
        };
        let pairs = match piece.and_then(|k| scratch.pieces.get(k)) {
            Some((p, true)) => p,
            _ => &self.all_pairs,
        };
        frames_valid_fast(
            &self.model,
            &self.scene,
            &self.groups,
            pairs,
            &scratch.frames,
            sweep,
            growth,
            &mut scratch.fast,
        )
    }

    /// Culls the pairs of piece `k` of [`MOTION_PIECES`] of the motion `start + t diff` (`t`
    /// in `[k / P, (k + 1) / P]`) for growths up to `scratch.sweep`: [`PairList::for_motion_with`]
    /// at the piece's midpoint, with `scratch.travel` the bodies' travel over a piece.
    fn cull_piece(&self, start: &[f32], diff: &[f32], k: usize, scratch: &mut Scratch) {
        let model = &self.model;
        let dof = model.dof();
        let t = (2 * k + 1) as f32 / (2 * MOTION_PIECES) as f32;
        self.fill_state((0..dof).map(|j| start[j] + diff[j] * t), scratch);
        frame_poses_fast(model, &scratch.state, &mut scratch.frames);
        if let Some((pairs, ready)) = scratch.pieces.get_mut(k) {
            PairList::for_motion_with(
                model,
                &self.scene,
                &self.groups,
                &scratch.frames,
                scratch.sweep.bodies(),
                &scratch.travel,
                pairs,
                &mut scratch.cull,
            );
            *ready = true;
        }
    }

    /// The reference configuration check: [`config_valid`] on every configuration. The
    /// twin of the GPU backends' configuration check; [`Checker::check_configs`] gives the
    /// same verdicts with less work, and tests hold the two together.
    pub fn check_configs_reference(
        &self,
        configs: &ConfigBatch,
    ) -> Result<Vec<bool>, CollisionError> {
        validate_batch(&self.space, configs)?;
        let dof = self.space.dof();
        let values: Vec<f32> = configs.values().iter().map(|&v| v as f32).collect();
        Ok(self.parallel(configs.len(), |i, s| {
            self.fill_state(values[i * dof..(i + 1) * dof].iter().copied(), s);
            config_valid(&self.model, &self.scene, &s.state, &mut s.frames)
        }))
    }

    /// Status of motion `i` of prepared motions (twin: `check_motions_naive`).
    pub fn motion_status(
        &self,
        p: &PreparedMotions,
        i: usize,
        scratch: &mut Scratch,
    ) -> MotionStatus {
        let dof = self.model.dof();
        let start = &p.start[i * dof..(i + 1) * dof];
        let diff = &p.diff[i * dof..(i + 1) * dof];
        let n = p.segments[i];
        scratch.sweep.set(&self.model, diff, n);
        let mut status = MotionStatus::Valid;
        for step in bisection_order(n) {
            let t = step as f32 / n as f32;
            self.fill_state((0..dof).map(|j| start[j] + diff[j] * t), scratch);
            frame_poses(&self.model, &scratch.state, &mut scratch.frames);
            if frames_valid(&self.model, &self.scene, &scratch.frames, &scratch.sweep) {
                continue;
            }
            if !frames_valid(&self.model, &self.scene, &scratch.frames, &NO_SWEEP) {
                return MotionStatus::Collides;
            }
            status = MotionStatus::Uncertain;
        }
        status
    }

    /// Verdict of motion `i` of prepared motions: the same verdict as
    /// [`refine_motions_up_to`] `max_refinements` over [`Self::motion_status`] (what
    /// [`Checker::check_motions_refined`] of every backend answers), computed with less work.
    /// `evaluated` grows by the configurations visited.
    ///
    /// Why it is the same verdict: the swept check is monotone in the growth. A body grown
    /// more reaches every broad-phase sphere it reached before, and the GJK iteration does
    /// not depend on the margin, only its two exits do, both in the safe direction (f32
    /// rounding of `+`, `*` is monotone). So a configuration that passes with growth `e`
    /// passes with any smaller growth, in particular unswept, and a refined level
    /// ([`REFINE_FACTOR`] times the segments, smaller growth, and at every `REFINE_FACTOR`-th
    /// step the same configurations: step `s` of `n` and step `F s` of `F n` give the same
    /// f32 fraction, both exact below 2^24) passes there wherever the coarser level passed.
    /// Hence [`refine_motions`] answers valid exactly when some level, up to
    /// [`MAX_REFINEMENTS`] refinements, passes its swept check at every configuration (no
    /// level before it can then contain a colliding configuration). This function looks for
    /// that level: it stops a level at its first failing configuration
    /// (after which that level cannot pass), answers invalid at once when that configuration
    /// also fails unswept (it belongs to every finer level, so none can pass), skips in a
    /// finer level the configurations that passed in the coarser one, and starts each finer
    /// level next to where the coarser one failed. Motions whose growth is not a finite
    /// non-negative number take the reference path.
    ///
    /// Each configuration's verdict is that of [`frames_valid`], computed by
    /// [`frames_valid_fast`] over the pairs the motion can bring near
    /// ([`PairList::for_motion_with`], culled for each of [`MOTION_PIECES`] pieces of the motion at
    /// its midpoint, at the piece's first visit by a level with at least
    /// [`CULL_MIN_CONFIGS`] configurations in it, with that level's growth, which bounds the
    /// growth of every finer level and of the unswept check), or over every pair in a piece
    /// not culled.
    pub fn motion_valid(
        &self,
        p: &PreparedMotions,
        i: usize,
        scratch: &mut Scratch,
        evaluated: &mut u64,
        max_refinements: u32,
    ) -> bool {
        let dof = self.model.dof();
        let start = &p.start[i * dof..(i + 1) * dof];
        let diff = &p.diff[i * dof..(i + 1) * dof];
        let n0 = p.segments[i];
        // The levels refine_motions_up_to would visit.
        let mut levels = [n0; MAX_REFINEMENTS as usize + 1];
        let level_limit = max_refinements.min(MAX_REFINEMENTS) as usize + 1;
        let mut level_count = 1;
        while level_count < level_limit {
            match levels[level_count - 1]
                .checked_mul(REFINE_FACTOR)
                .filter(|&s| s < (1 << 24))
            {
                Some(s) => {
                    levels[level_count] = s;
                    level_count += 1;
                }
                None => break,
            }
        }
        let mut failed_at: Option<u32> = None;
        for (level, &n) in levels[..level_count].iter().enumerate() {
            scratch.sweep.set(&self.model, diff, n);
            self.groups
                .growth(scratch.sweep.bodies(), &mut scratch.group_sweep);
            if n == 0
                || !scratch
                    .sweep
                    .bodies()
                    .iter()
                    .all(|e| e.is_finite() && *e >= 0.0)
            {
                return self.motion_valid_reference(p, i, scratch, evaluated, max_refinements);
            }
            if level == 0 && self.lanes.is_none() {
                // Travel over a piece: a power-of-two fraction of the whole (exact).
                motion_travel(&self.model, diff, &mut scratch.travel);
                for t in &mut scratch.travel {
                    *t *= 1.0 / MOTION_PIECES as f32;
                }
                scratch
                    .pieces
                    .resize(MOTION_PIECES as usize, Default::default());
                for piece in &mut scratch.pieces {
                    piece.1 = false;
                }
            }
            // Configurations known to pass from the coarser level: index s there is
            // REFINE_FACTOR s here.
            std::mem::swap(&mut scratch.passed, &mut scratch.passed_before);
            scratch.passed.clear();
            scratch.passed.resize(n as usize + 1, false);
            if level > 0 {
                for (s, &ok) in scratch.passed_before.iter().enumerate() {
                    if ok {
                        scratch.passed[s * REFINE_FACTOR as usize] = true;
                    }
                }
            }
            // First the failing configuration of the coarser level and its new neighbours.
            let mut first = [0u32; 1 + 2 * (REFINE_FACTOR / 2) as usize];
            let mut first_count = 0;
            if let Some(f) = failed_at {
                let c = f.saturating_mul(REFINE_FACTOR);
                first[0] = c;
                first_count = 1;
                for d in 1..REFINE_FACTOR / 2 + 1 {
                    if c >= d {
                        first[first_count] = c - d;
                        first_count += 1;
                    }
                    if c + d <= n {
                        first[first_count] = c + d;
                        first_count += 1;
                    }
                }
            }
            failed_at = None;
            if let Some(lanes) = self.lanes() {
                let firsts = &first[..first_count];
                match self.level_lanes(&lanes, start, diff, n, firsts, scratch, evaluated) {
                    LevelEnd::Passed => return true,
                    LevelEnd::Collides => return false,
                    LevelEnd::FailedAt(step) => {
                        failed_at = Some(step);
                        continue;
                    }
                }
            }
            let mut queue = std::mem::take(&mut scratch.bisect_queue);
            let mut walk = Bisection::new(n);
            let mut firsts = first[..first_count].iter();
            let mut verdict = None;
            while let Some(step) = firsts.next().copied().or_else(|| walk.next(&mut queue)) {
                let Some(known) = scratch.passed.get(step as usize).copied() else {
                    continue;
                };
                if known {
                    continue;
                }
                *evaluated += 1;
                // The piece of the motion this configuration lies in (step / n is in
                // [k / P, (k + 1) / P]); its pairs are culled at its first visit by a level
                // with at least CULL_MIN_CONFIGS configurations there, with that level's
                // growth: the growths of finer levels are no larger (more segments of the
                // same motion, each joint step rounded no larger). Unculled, every pair.
                let k = ((u64::from(step) * u64::from(MOTION_PIECES)) / u64::from(n))
                    .min(u64::from(MOTION_PIECES) - 1) as usize;
                if !scratch.pieces.get(k).is_some_and(|p| p.1)
                    && piece_configs(n, k) >= CULL_MIN_CONFIGS
                {
                    self.cull_piece(start, diff, k, scratch);
                }
                let t = step as f32 / n as f32;
                self.fill_state((0..dof).map(|j| start[j] + diff[j] * t), scratch);
                frame_poses_fast(&self.model, &scratch.state, &mut scratch.frames);
                if self.frames_valid(scratch, true, Some(k)) {
                    scratch.passed[step as usize] = true;
                    continue;
                }
                if !self.frames_valid(scratch, false, Some(k)) {
                    verdict = Some(false); // in collision: no level can pass
                    break;
                }
                failed_at = Some(step);
                break;
            }
            scratch.bisect_queue = queue;
            if let Some(v) = verdict {
                return v;
            }
            if failed_at.is_none() {
                return true;
            }
        }
        false
    }

    /// One refinement level (`n` segments, bodies grown by `scratch.sweep`) of
    /// [`Self::motion_valid`], eight configurations at a time ([`Lanes::check`], every pair):
    /// `firsts` and then the bisection walk, skipping what `scratch.passed` knows to pass,
    /// in batches of [`LANES`]. A batch where a configuration fails its swept check ends the
    /// level: the motion collides when one of the failing configurations fails unswept too
    /// (it belongs to every finer level), and otherwise the level is refined around the first
    /// of them in the walk's order. Configurations of the batch that passed are marked in
    /// `scratch.passed` (they pass at every finer level too). The verdict is the scalar
    /// path's: only which configurations are computed, not their verdicts, differs.
    #[allow(clippy::too_many_arguments)]
    fn level_lanes(
        &self,
        lanes: &Lanes<'_>,
        start: &[f32],
        diff: &[f32],
        n: u32,
        firsts: &[u32],
        scratch: &mut Scratch,
        evaluated: &mut u64,
    ) -> LevelEnd {
        let mut queue = std::mem::take(&mut scratch.bisect_queue);
        let mut walk = Bisection::new(n);
        let mut firsts = firsts.iter();
        let mut end = LevelEnd::Passed;
        loop {
            let mut steps = [0u32; LANES];
            let mut count = 0;
            while count < LANES {
                let Some(step) = firsts.next().copied().or_else(|| walk.next(&mut queue)) else {
                    break;
                };
                if scratch.passed.get(step as usize).copied() == Some(false) {
                    steps[count] = step;
                    count += 1;
                }
            }
            if count == 0 {
                break;
            }
            *evaluated += count as u64;
            // Each lane's configuration as the scalar path computes it; the checks stop at
            // the first configuration that fails ungrown (all the level needs to know).
            let v = lanes.check(
                |j, l| start[j] + diff[j] * (steps[l] as f32 / n as f32),
                &self.all_pairs,
                &scratch.sweep,
                &scratch.group_sweep,
                first_lanes(count),
                Need::AnyUngrown,
                &mut scratch.lane,
            );
            if v.unswept != 0 {
                end = LevelEnd::Collides;
                break;
            }
            // No configuration fails ungrown: `v.swept` is complete.
            for (l, &step) in steps[..count].iter().enumerate() {
                if v.swept & (1 << l) == 0 {
                    scratch.passed[step as usize] = true;
                }
            }
            if v.swept == 0 {
                continue;
            }
            end = LevelEnd::FailedAt(steps[v.swept.trailing_zeros() as usize]);
            break;
        }
        scratch.bisect_queue = queue;
        end
    }

    /// [`refine_motions`] over [`Self::motion_status`] for motion `i` alone.
    fn motion_valid_reference(
        &self,
        p: &PreparedMotions,
        i: usize,
        scratch: &mut Scratch,
        evaluated: &mut u64,
        max_refinements: u32,
    ) -> bool {
        let dof = self.model.dof();
        let one = PreparedMotions {
            start: p.start[i * dof..(i + 1) * dof].to_vec(),
            diff: p.diff[i * dof..(i + 1) * dof].to_vec(),
            segments: vec![p.segments[i]],
        };
        refine_motions_up_to(&one, max_refinements, |q| {
            Ok((0..q.segments.len())
                .map(|k| {
                    *evaluated += u64::from(q.segments[k]) + 1;
                    self.motion_status(q, k, scratch)
                })
                .collect())
        })
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or(false)
    }

    /// The reference motion check: [`refine_motions`] over [`Self::motion_status`], the
    /// twin of the GPU backends' motion check. [`Checker::check_motions`] gives the same
    /// verdicts with less work (see [`Self::motion_valid`]); tests hold the two together.
    pub fn check_motions_reference(
        &self,
        motions: &MotionBatch,
        resolution: f64,
    ) -> Result<Vec<bool>, CollisionError> {
        self.check_motions_reference_refined(motions, resolution, MAX_REFINEMENTS)
    }

    /// [`Self::check_motions_reference`] with at most `max_refinements` refinements
    /// ([`refine_motions_up_to`]), the reference of [`Checker::check_motions_refined`].
    pub fn check_motions_reference_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        let p = prepare_motions(&self.space, motions, resolution)?;
        refine_motions_up_to(&p, max_refinements, |q| {
            Ok(self.parallel(q.segments.len(), |i, s| self.motion_status(q, i, s)))
        })
    }

    fn parallel<T, F>(&self, n: usize, f: F) -> Vec<T>
    where
        T: Clone + Default + Send,
        F: Fn(usize, &mut Scratch) -> T + Sync,
    {
        let threads = self.threads.clamp(1, 64).min(n.max(1));
        let mut out = vec![T::default(); n];
        if threads <= 1 || n < 64 {
            let take = self.scratch.lock().ok().and_then(|mut pool| pool.pop());
            let mut s = take.unwrap_or_default();
            for (i, o) in out.iter_mut().enumerate() {
                *o = f(i, &mut s);
            }
            if let Ok(mut pool) = self.scratch.lock() {
                pool.push(s);
            }
            return out;
        }
        // `threads` chunks on rayon's pool (threads started once per process: spawning them
        // per call cost more than the work of batches of a few hundred), each chunk with a
        // scratch from the pool.
        use rayon::prelude::*;
        let chunk = n.div_ceil(threads);
        out.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
            let take = self.scratch.lock().ok().and_then(|mut pool| pool.pop());
            let mut s = take.unwrap_or_default();
            for (k, o) in part.iter_mut().enumerate() {
                *o = f(c * chunk + k, &mut s);
            }
            if let Ok(mut pool) = self.scratch.lock() {
                pool.push(s);
            }
        });
        out
    }
}

impl Checker for CpuChecker {
    fn space(&self) -> &JointSpace {
        &self.space
    }

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        self.names.contacts(&self.model, &self.scene, q)
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        validate_batch(&self.space, configs)?;
        let dof = self.space.dof();
        let values: Vec<f32> = configs.values().iter().map(|&v| v as f32).collect();
        self.evaluated
            .fetch_add(configs.len() as u64, Ordering::Relaxed);
        if let Some(lanes) = self.lanes() {
            let n = configs.len();
            let hits = self.parallel(n.div_ceil(LANES), |c, s| {
                let rows = &values[c * LANES * dof..n.min((c + 1) * LANES) * dof];
                let count = rows.len() / dof.max(1);
                lanes
                    .check(
                        |j, l| rows[l * dof + j],
                        &self.all_pairs,
                        &NO_SWEEP,
                        &self.rest_growth,
                        first_lanes(count),
                        Need::Every,
                        &mut s.lane,
                    )
                    .swept
            });
            return Ok((0..n)
                .map(|i| hits[i / LANES] & (1 << (i % LANES)) == 0)
                .collect());
        }
        Ok(self.parallel(configs.len(), |i, s| {
            self.config_valid_f32(&values[i * dof..(i + 1) * dof], s)
        }))
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        let p = prepare_motions(&self.space, motions, resolution)?;
        Ok(self.parallel(p.segments.len(), |i, s| {
            let mut evaluated = 0;
            let ok = self.motion_valid(&p, i, s, &mut evaluated, max_refinements);
            self.evaluated.fetch_add(evaluated, Ordering::Relaxed);
            ok
        }))
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn configs_evaluated(&self) -> Option<u64> {
        Some(self.evaluated.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refinement_rechecks_only_uncertain_motions_and_caps_them() {
        // Motion i (start value i, one joint) is uncertain below `need[i]` segments, then valid;
        // motion 3 collides at once; motion 4 never gets certain.
        let need = [4u32, 1, 64, 0, u32::MAX, 16];
        let p = PreparedMotions {
            start: (0..need.len()).map(|i| i as f32).collect(),
            diff: vec![0.5; need.len()],
            segments: vec![1; need.len()],
        };
        for cap in 0..=MAX_REFINEMENTS {
            let mut rounds: Vec<Vec<(usize, u32)>> = Vec::new();
            let verdicts = refine_motions_up_to(&p, cap, |q| {
                let items: Vec<(usize, u32)> = q
                    .start
                    .iter()
                    .zip(&q.segments)
                    .map(|(&s, &n)| (s as usize, n))
                    .collect();
                let statuses = items
                    .iter()
                    .map(|&(i, n)| match i {
                        3 => MotionStatus::Collides,
                        _ if n >= need[i] => MotionStatus::Valid,
                        _ => MotionStatus::Uncertain,
                    })
                    .collect();
                rounds.push(items);
                Ok(statuses)
            })
            .unwrap();
            let levels = REFINE_FACTOR.pow(cap);
            let want: Vec<bool> = (0..need.len())
                .map(|i| i != 3 && need[i] <= levels)
                .collect();
            assert_eq!(verdicts, want, "cap {cap}");
            // Round k checks exactly the motions still uncertain, at REFINE_FACTOR^k segments.
            for (k, round) in rounds.iter().enumerate().skip(1) {
                let seg = REFINE_FACTOR.pow(k as u32);
                let expect: Vec<(usize, u32)> = [0usize, 2, 4, 5]
                    .into_iter()
                    .filter(|&i| need[i] > seg / REFINE_FACTOR)
                    .map(|i| (i, seg))
                    .collect();
                assert_eq!(round, &expect, "cap {cap}, round {k}");
            }
            assert_eq!(rounds.len(), cap as usize + 1, "motion 4 stays uncertain");
        }
        // A backend answering the wrong number of statuses is an error, not a panic.
        let mut first = true;
        let err = refine_motions_up_to(&p, 2, |q| {
            let n = q.segments.len() + usize::from(!first);
            first = false;
            Ok(vec![MotionStatus::Uncertain; n])
        });
        assert!(matches!(err, Err(CollisionError::Backend { .. })));
    }

    /// The order as first written: a queue of every half, split breadth first.
    fn bisection_order_queued(segments: u32) -> Vec<u32> {
        let mut order = vec![0, segments];
        if segments == 0 {
            order.pop();
            return order;
        }
        let mut queue = std::collections::VecDeque::from([(0u32, segments)]);
        while let Some((lo, hi)) = queue.pop_front() {
            if hi - lo < 2 {
                continue;
            }
            let mid = lo + (hi - lo) / 2;
            order.push(mid);
            queue.push_back((lo, mid));
            queue.push_back((mid, hi));
        }
        order
    }

    /// `contacts` names pairs exactly for the configurations in collision (checked on random
    /// configurations of the bundled arm and scene), and names the right ones for a known case.
    #[test]
    fn contacts_name_the_pairs_of_configurations_in_collision() {
        use rand::{Rng, SeedableRng};
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled robot");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let checker =
            CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default()).expect("cpu");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let space = &group.space;
        let (mut hit, mut free) = (0, 0);
        for _ in 0..400 {
            let q: Vec<f64> = (0..space.dof())
                .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
                .collect();
            let valid = checker.check_config(&q).expect("check");
            let pairs = checker.contacts(&q).expect("the CPU names pairs");
            assert_eq!(valid, pairs.is_empty(), "{q:?}: {pairs:?}");
            if valid {
                free += 1;
            } else {
                hit += 1;
                assert!(pairs.iter().all(|p| p.starts_with('\'')), "{pairs:?}");
            }
        }
        assert!(hit > 20 && free > 20, "{hit} in collision, {free} free");
        // The upper arm folded down into the table and the base: named by link and obstacle.
        let q = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0];
        let pairs = checker.contacts(&q).expect("pairs");
        assert!(!checker.check_config(&q).expect("check"));
        assert!(
            pairs.iter().any(|p| p.contains("with obstacle '")),
            "{pairs:?}"
        );
        // A configuration of the wrong length has no answer rather than a panic.
        assert_eq!(checker.contacts(&[0.0]), None);
    }

    /// The checks split over threads (rayon's pool, scratches from the checker's pool) give
    /// the one-thread verdicts, call after call.
    #[test]
    fn threaded_checks_equal_the_one_thread_checks() {
        use rand::SeedableRng;
        let (robot, scene) = crate::cli::demo::bundled().expect("bundled robot");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let make = |threads| {
            let opts = CheckerOptions {
                threads,
                ..CheckerOptions::default()
            };
            CpuChecker::new(&robot, &group, &base, &scene, opts).expect("checker")
        };
        let (one, four) = (make(1), make(4));
        let space = one.space().clone();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut draw = || space.sample_uniform(&mut rng);
        let rows: Vec<Vec<f64>> = (0..1000).map(|_| draw()).collect();
        let refs: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
        let configs = ConfigBatch::from_rows(space.dof(), &refs).expect("batch");
        let mut motions = MotionBatch::new(space.dof());
        for w in rows.chunks(2).take(300) {
            motions.push(&w[0], &w[1]).expect("motion");
        }
        let want = (
            one.check_configs(&configs).expect("configs"),
            one.check_motions(&motions, 0.05).expect("motions"),
        );
        assert!(want.0.iter().any(|&v| v) && want.0.iter().any(|&v| !v));
        assert!(want.1.iter().any(|&v| v) && want.1.iter().any(|&v| !v));
        for _ in 0..3 {
            assert_eq!(four.check_configs(&configs).expect("configs"), want.0);
            assert_eq!(four.check_motions(&motions, 0.05).expect("motions"), want.1);
        }
    }

    #[test]
    fn parallel_preparation_equals_the_sequential_one() {
        let space = JointSpace {
            names: vec!["a".into(), "b".into(), "c".into()],
            lower: vec![-3.0, -1.0, -3.2],
            upper: vec![3.0, 1.0, 3.2],
            continuous: vec![false, false, true],
            max_velocity: vec![1.0; 3],
            max_acceleration: vec![1.0; 3],
            max_jerk: vec![f64::INFINITY; 3],
        };
        let n = 3 * PREPARE_GRAIN + 17;
        let mut motions = MotionBatch::new(3);
        let mut x = 0.37f64;
        let mut next = || {
            x = (x * 7.13 + 0.291) % 1.0;
            x * 6.0 - 3.0
        };
        for _ in 0..n {
            let a = [next(), next() / 3.0, next()];
            let b = [next(), next() / 3.0, next()];
            motions.push(&a, &b).unwrap();
        }
        let seq = prepare_motions(&space, &motions, 0.01).unwrap();
        let par = prepare_motions_parallel(&space, &motions, 0.01).unwrap();
        assert_eq!(seq, par);
        assert_eq!(par.segments.len(), n);
        assert!(par.segments.iter().all(|&s| s >= 1));
        // The errors are the sequential ones: the first non-finite value is named.
        let mut bad = MotionBatch::new(3);
        for i in 0..n {
            let mut b = motions.to.row(i).to_vec();
            if i == PREPARE_GRAIN + 5 || i == n - 1 {
                b[1] = f64::NAN;
            }
            bad.push(motions.from.row(i), &b).unwrap();
        }
        let e = prepare_motions_parallel(&space, &bad, 0.01).unwrap_err();
        assert_eq!(
            e.to_string(),
            prepare_motions(&space, &bad, 0.01).unwrap_err().to_string()
        );
        assert!(
            matches!(e, CollisionError::NonFinite { index, .. } if index == PREPARE_GRAIN + 5),
            "{e:?}"
        );
        assert!(matches!(
            prepare_motions_parallel(&space, &motions, 0.0),
            Err(CollisionError::BadResolution(_))
        ));
    }

    #[test]
    fn lazy_bisection_is_the_queued_order() {
        let mut queue = vec![(7, 9); 5]; // stale contents from another walk do not matter
        for n in (0u32..300).chain([1000, 1023, 1024, 1025, 4097]) {
            let mut walk = Bisection::new(n);
            let mut lazy = Vec::new();
            while let Some(s) = walk.next(&mut queue) {
                lazy.push(s);
            }
            assert_eq!(
                walk.next(&mut queue),
                None,
                "n = {n}: the walk stays finished"
            );
            assert_eq!(lazy, bisection_order_queued(n), "n = {n}");
            assert_eq!(bisection_order(n), lazy, "n = {n}");
        }
    }

    #[test]
    fn piece_configs_counts_the_configurations_of_each_piece() {
        for n in 0u32..200 {
            let mut count = [0u64; MOTION_PIECES as usize];
            for s in 0..=n {
                let k = if n == 0 {
                    0
                } else {
                    ((u64::from(s) * u64::from(MOTION_PIECES)) / u64::from(n))
                        .min(u64::from(MOTION_PIECES) - 1) as usize
                };
                count[k] += 1;
            }
            for (k, &c) in count.iter().enumerate() {
                assert_eq!(piece_configs(n, k), c, "n = {n}, piece {k}");
            }
        }
    }

    #[test]
    fn bisection_order_is_a_permutation() {
        for n in [0u32, 1, 2, 3, 7, 10, 64, 100] {
            let mut o = bisection_order(n);
            assert_eq!(o.len(), n as usize + 1, "n = {n}");
            o.sort_unstable();
            assert_eq!(o, (0..=n).collect::<Vec<_>>());
        }
    }
}
