//! The dynamic roadmap: a persistent PRM roadmap whose edge labels follow the scene as
//! obstacles are added, moved and removed, without re-checking every edge.
//!
//! Two label methods share one precomputation of the edges' swept volumes (see [`sweep`]):
//!
//! * **DRM** (Leven and Hutchinson): a workspace voxel grid; every cell lists the edges whose
//!   swept volume touches it. An obstacle marks the edges listed in its cells Unknown (gray);
//!   the others stay Valid (green).
//! * **RGG** (Red-Green-Gray): per edge and body an outer oriented box of the swept body and
//!   inner capsules (inner spheres of the body swept along the edge, the polyline of their
//!   centres simplified while staying inside); per obstacle an outer box and inner balls.
//!   Outer disjoint: Valid; inner overlapping: Invalid (red); otherwise Unknown. The
//!   approximations live in flat arrays per (edge, body) pair (`layout.rs`); BVHs over the
//!   outer boxes find the candidate pairs of an obstacle, so an update tests only those,
//!   split over threads ([`RggEngine::Bvh`]; [`RggEngine::BruteForce`] tests every pair).
//!   With a GPU ([`RggEngine::Cuda`]) the arrays stay resident on the device and one kernel
//!   labels every pair against the changed obstacle (only the obstacle goes up, two bits per
//!   edge come back), with the CPU's verdicts exactly.
//!
//! [`DynamicRoadmap::update`] follows the scene's change log and processes only the changed
//! obstacle slots; [`DynamicRoadmap::search`] / [`DynamicRoadmap::plan`] search over Valid
//! and Unknown edges, check the Unknown edges of the candidate path in one batch, relabel
//! them and repeat (lazy PRM).
//!
//! # Conservativeness
//!
//! Labels are held to the checker's verdict on the edge's motion at the roadmap resolution
//! (the [`CpuChecker`] with the same robot, planning group, base state and margin):
//!
//! * The swept volumes are built from exactly the checked configurations (same f32
//!   interpolation, same f32 forward kinematics as the checker), so the bodies seen here are
//!   the checker's polytopes.
//! * **Valid** needs the edge free of self-collision (checked once, exactly, at build time:
//!   self-collision does not depend on obstacles) and, for every obstacle, the outer
//!   approximations disjoint. The robot's outer boxes (RGG) and voxel footprints (DRM)
//!   contain every body at every checked configuration grown by the checker margin plus
//!   `tolerance`, and the obstacle's box / cells contain the obstacle, so a disjoint pair
//!   means the checker sees a gap of more than its margin everywhere on the edge.
//! * **Invalid** needs an inner capsule of the edge to overlap an inner ball of an obstacle.
//!   Every point of a capsule lies within a body's inner sphere (shrunk by `tolerance`) at
//!   some *checked* configuration (the simplification bounds the distance of the capsule to
//!   the checked centres, see `sweep::simplify`), and every inner ball lies inside the
//!   obstacle by `tolerance`, so the checker's body and obstacle overlap there by at least
//!   `tolerance`: it reports a collision.
//! * A label found by lazy validation is the checker's verdict; it is dropped as soon as an
//!   obstacle whose old or new outer approximation may touch the edge changes.
//!
//! The label computations are batch operations over flat arrays (one pass over edges for
//! the sweep, one over candidate pairs per obstacle). The self-collision check of the build
//! runs on the GPU when [`DynamicRoadmapOptions::gpu`] is set and one is present (the CUDA
//! checker's verdicts are the CPU's); so do the voxel map (the `drm_voxel_*` kernels compute
//! every edge's cells with the CPU's arithmetic: the identical map, see [`VoxelEngine`]) and
//! the label updates.

pub mod geom;
pub(crate) mod layout;
pub(crate) mod obstacle;
pub mod sweep;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use self::geom::Aabb;
use self::layout::{
    count_listed, pack_verdicts, unpack_verdicts, RggLayout, VerdictBits, EDGES_PER_WORD, HIT, NEAR,
};
use self::obstacle::{approximate, ObstacleApprox};
pub use self::sweep::Grid;
use self::sweep::{BodyLocal, Sweep, SweepOut, SweepParams};
use crate::collision::{
    make_checker, prepare_motions, Checker, CheckerOptions, CollisionError, CollisionModel,
    ConfigBatch, CpuChecker, MotionBatch, RobotShapes, DEFAULT_MARGIN,
};
use crate::gpu::rgg::{RggDevice, RggTimings};
use crate::gpu::voxel::{VoxelJob, VoxelTimings};
use crate::planners::prm::Prm;
use crate::planners::{
    plan_each_goal, run, PlanError, PlanRequest, PlanResult, PlannerId, RawSolution,
};
use crate::roadmap::{EdgeLabel, NearestNeighbors, NnError, Roadmap, RoadmapError};
use crate::robot::{JointSpace, PlanningGroup, RobotModel};
use crate::scene::{Obstacle, Scene, SceneChange};

/// Which label method a query uses, or a label export shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LabelMethod {
    /// Voxel map (Valid / Unknown only).
    Drm,
    /// Red-Green-Gray approximations (Valid / Invalid / Unknown).
    Rgg,
}

/// How the RGG verdicts of a changed obstacle are computed. All three give identical
/// verdicts (tests hold them to it); they differ only in speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RggEngine {
    /// BVHs over the outer boxes find the candidate (edge, body) pairs; split over the
    /// option's threads.
    Bvh,
    /// Every pair is tested (the reference), split over the option's threads.
    BruteForce,
    /// The `rgg_label` CUDA kernel over every pair, the layout resident on the GPU.
    Cuda,
}

/// Options of a dynamic roadmap.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicRoadmapOptions {
    /// Motion-check resolution of the edges (joint-space distance between checked
    /// configurations); labels are about the motion at this resolution.
    pub resolution: f64,
    /// DRM voxel edge length (model units, metres for URDFs); `None` builds no voxel map.
    pub drm_cell_size: Option<f64>,
    /// DRM grid bounds `(min, max)`; `None` = the bounding box of all swept volumes.
    pub drm_bounds: Option<([f64; 3], [f64; 3])>,
    /// Build the RGG approximations.
    pub rgg: bool,
    /// Labels the queries use (falls back to the other method when this one is not built).
    pub plan_with: LabelMethod,
    /// Outer boxes per body and edge (RGG): the edge's checked configurations are split into
    /// this many consecutive groups with one box each.
    pub boxes_per_body: usize,
    /// Inner spheres per robot body (RGG).
    pub inner_spheres_per_body: usize,
    /// Most inner balls per axis of a box obstacle (RGG).
    pub obstacle_inner_per_axis: usize,
    /// Capsules may shrink to this fraction of their sphere's radius when a polyline is
    /// shortcut, in `(0, 1]`.
    pub min_capsule_radius_ratio: f64,
    /// Most checked configurations one capsule spans.
    pub max_capsule_span: usize,
    /// Safety distance added to outer and taken off inner approximations (model units);
    /// absorbs f32 rounding and the checker's search tolerance.
    pub tolerance: f64,
    /// The checker margin (must equal the margin of the checkers used with this roadmap).
    pub margin: f32,
    /// Worker threads for the precomputation, the CPU verdict passes and the relabelling of
    /// large updates (0 = all cores).
    pub threads: usize,
    /// Fewest edges per worker thread when an update relabels (smaller roadmaps relabel on
    /// the calling thread; thread start-up costs more than small shares save).
    pub relabel_edges_per_worker: usize,
    /// Roadmap vertices a start or goal that is not a vertex is joined to.
    pub connect_neighbors: usize,
    /// Use the GPU when one is present: the build's self-collision check runs on the CUDA
    /// checker, the DRM voxel map is built by the CUDA voxel kernels and label updates run on
    /// the CUDA engine (identical results). Without a usable GPU one line on stderr says so and
    /// the CPU does the work.
    pub gpu: bool,
}

impl Default for DynamicRoadmapOptions {
    /// Resolution 0.02, 5 cm voxels, RGG on and used for queries, 4 outer boxes and 4 inner
    /// spheres per body,
    /// capsules down to half radius over at most 32 configurations, 0.1 mm tolerance, the
    /// default checker margin, all cores (relabelling: 16,384 edges or more per worker), 10
    /// connections for start and goal, CPU only.
    fn default() -> Self {
        Self {
            resolution: 0.02,
            drm_cell_size: Some(0.05),
            drm_bounds: None,
            rgg: true,
            plan_with: LabelMethod::Rgg,
            boxes_per_body: 4,
            inner_spheres_per_body: 4,
            obstacle_inner_per_axis: 8,
            min_capsule_radius_ratio: 0.5,
            max_capsule_span: 32,
            tolerance: 1e-4,
            margin: DEFAULT_MARGIN,
            threads: 0,
            relabel_edges_per_worker: 16_384,
            connect_neighbors: 10,
            gpu: false,
        }
    }
}

/// Errors of building or updating a dynamic roadmap.
#[derive(Debug, thiserror::Error)]
pub enum DynamicError {
    /// An option is unusable.
    #[error("dynamic roadmap option: {0}")]
    Options(String),
    /// The robot could not be compiled for collision checking.
    #[error("dynamic roadmap robot model: {0}")]
    Model(String),
    /// The self-collision check failed.
    #[error("dynamic roadmap: {0}")]
    Collision(#[from] CollisionError),
    /// The roadmap is inconsistent.
    #[error("dynamic roadmap: {0}")]
    Roadmap(#[from] RoadmapError),
    /// Neighbour search failed.
    #[error("dynamic roadmap: {0}")]
    Neighbors(#[from] NnError),
}

/// Label counts of one method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LabelCounts {
    /// Green edges.
    pub valid: usize,
    /// Red edges.
    pub invalid: usize,
    /// Gray edges.
    pub unknown: usize,
}

/// What one [`DynamicRoadmap::update`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UpdateStats {
    /// Obstacle slots processed (each removal of an old and insertion of a new state).
    pub slots: usize,
    /// True when the change log was incomplete and every slot was reprocessed.
    pub full_resync: bool,
    /// Edges listed by the voxel cells of the old and new obstacle states (DRM).
    pub drm_candidates: usize,
    /// (edge, body) pairs whose verdict was computed for the new obstacle states (RGG): the
    /// BVH's candidates, or every pair for the brute-force and CUDA engines.
    pub rgg_candidates: usize,
    /// Edges listed (not outer-disjoint) for the old and new obstacle states (RGG).
    pub rgg_listed: usize,
    /// Effective label changes (an edge changed back and forth by two slots of one update
    /// counts twice).
    pub relabelled: usize,
    /// Time in the DRM part: the new states' cell lists, and the counter and label updates
    /// of the DRM difference (summed over the relabelling workers).
    pub drm_time: Duration,
    /// Time in the RGG part: the new states' verdict passes, and the counter and label
    /// updates of the RGG difference (summed over the relabelling workers).
    pub rgg_time: Duration,
    /// Time computing the new obstacle states (approximations, DRM cell lists, RGG verdict
    /// passes on the selected engine, copies included).
    pub labelling_time: Duration,
    /// Time in the host bookkeeping: old states taken off and new ones put on the counters,
    /// the edges whose counters or lazy validation results changed relabelled.
    pub bookkeeping_time: Duration,
}

impl UpdateStats {
    /// Adds `other`'s counts and times to these (the updates of several roadmaps).
    pub fn add(&mut self, other: &UpdateStats) {
        self.slots += other.slots;
        self.full_resync |= other.full_resync;
        self.drm_candidates += other.drm_candidates;
        self.rgg_candidates += other.rgg_candidates;
        self.rgg_listed += other.rgg_listed;
        self.relabelled += other.relabelled;
        self.drm_time += other.drm_time;
        self.rgg_time += other.rgg_time;
        self.labelling_time += other.labelling_time;
        self.bookkeeping_time += other.bookkeeping_time;
    }
}

/// A path through the roadmap found by [`DynamicRoadmap::search`].
#[derive(Clone, Debug, PartialEq)]
pub struct RoadmapPath {
    /// Configurations from start to goal.
    pub configs: Vec<Vec<f64>>,
    /// Roadmap vertex of each configuration (`None` for a start or goal outside the roadmap).
    pub vertices: Vec<Option<usize>>,
    /// Roadmap edge of each step (`None` for the connections of start and goal).
    pub edges: Vec<Option<usize>>,
    /// Joint-space length.
    pub cost: f64,
    /// Search-and-validate rounds.
    pub rounds: usize,
    /// Edges checked lazily.
    pub edges_checked: usize,
}

/// Where the DRM voxel map is built. Both engines give the identical map (the same cells for
/// every edge; `tests/gpu_parity.rs` holds them to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum VoxelEngine {
    /// The sweep over the worker threads (the reference).
    Cpu,
    /// The `drm_voxel_*` CUDA kernels (`crate::gpu::voxel`).
    Cuda,
}

/// How the DRM voxel map was built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VoxelMapStats {
    /// Where the cells of the edges were computed.
    pub engine: VoxelEngine,
    /// Wall time of the map: the grid, the cells of every edge and the cell -> edges lists (the
    /// sweep the RGG approximations and the grid bounds come from is not included).
    pub build_time: Duration,
    /// The part of `build_time` spent on the cells of every edge (the sweep on the CPU threads,
    /// or the CUDA builder with its uploads and copies); the rest is the cell -> edges lists,
    /// built on the host either way.
    pub cells_time: Duration,
    /// Timings of the CUDA builder, when it built the cells.
    pub cuda: Option<VoxelTimings>,
}

/// A view of the DRM voxel map: for every cell of `grid` (linear index
/// [`Grid::index`]), the edges whose swept volume may touch it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VoxelMap<'a> {
    /// The grid.
    pub grid: &'a Grid,
    /// `grid.len() + 1` offsets: cell `c` lists `edges[offsets[c]..offsets[c + 1]]`.
    pub offsets: &'a [u32],
    /// The edges of every cell, ascending per cell.
    pub edges: &'a [u32],
}

/// The DRM voxel map: cell -> edges (CSR).
#[derive(Clone, Debug)]
struct DrmMap {
    grid: Grid,
    offsets: Vec<u32>,
    edges: Vec<u32>,
}

/// What an obstacle slot contributes to the labels, as bitmaps over the edges (empty: no
/// edge), so that replacing a state compares words and visits only the edges that differ.
#[derive(Clone, Debug, Default)]
struct SlotState {
    /// Edges in the obstacle's cells (DRM), one bit per edge (edge `e` at bit `e % 32` of
    /// word `e / 32`).
    drm: Vec<u32>,
    /// RGG verdicts, packed two bits per edge (see [`VerdictBits`]).
    rgg: VerdictBits,
}

/// Word `i` of a bitmap, zero past its end.
fn word(bits: &[u32], i: usize) -> u32 {
    bits.get(i).copied().unwrap_or(0)
}

/// True when edge `e` is marked in a one-bit-per-edge bitmap.
fn marked(bits: &[u32], e: usize) -> bool {
    (word(bits, e / 32) >> (e % 32)) & 1 != 0
}

/// The effective labels of every combination of an edge's state, indexed by
/// [`EdgeState::index`]: bit 0 set when the edge is in self-collision, bits 1-2 the lazy
/// validation result, bit 3 the query method says Invalid, bit 4 it says Unknown.
type LabelTable = [EdgeLabel; 32];

/// The table for query method `plan` (`None`: not built, every edge Unknown unless in
/// self-collision or validated): self-collision first, then a validation result, then the
/// method (Invalid before Unknown).
fn label_table(plan: Option<LabelMethod>) -> LabelTable {
    let mut t = [EdgeLabel::Unknown; 32];
    for (i, l) in t.iter_mut().enumerate() {
        let verified = ((i >> 1) & 3) as u8;
        *l = if i & 1 != 0 || verified == VERIFIED_INVALID {
            EdgeLabel::Invalid
        } else if verified == VERIFIED_VALID {
            EdgeLabel::Valid
        } else if plan.is_none() {
            EdgeLabel::Unknown
        } else if i & 8 != 0 {
            EdgeLabel::Invalid
        } else if i & 16 != 0 {
            EdgeLabel::Unknown
        } else {
            EdgeLabel::Valid
        };
    }
    t
}

/// The table index of an edge's state (see [`LabelTable`]) from its self-collision flag,
/// validation result and the query method's counters, without data-dependent branches:
/// updates relabel tens of thousands of edges whose states vary at random.
#[inline]
fn label_index(
    plan: Option<LabelMethod>,
    self_free: bool,
    verified: u8,
    counters: (u32, u32, u32),
) -> usize {
    let (hits, unknown, invalid) = counters;
    let (invalid, unknown) = match plan {
        Some(LabelMethod::Rgg) => (invalid > 0, unknown > 0),
        Some(LabelMethod::Drm) => (false, hits > 0),
        None => (false, false),
    };
    (!self_free) as usize
        | ((verified & 3) as usize) << 1
        | (invalid as usize) << 3
        | (unknown as usize) << 4
}

/// One worker's share of an update's relabelling: the edges from `base` on (a multiple of
/// 32, so that both bitmaps split on word boundaries), with their counters and labels.
struct EdgeChunk<'a> {
    base: usize,
    drm_hits: &'a mut [u32],
    rgg_unknown: &'a mut [u32],
    rgg_invalid: &'a mut [u32],
    labels: &'a mut [EdgeLabel],
}

/// What every worker reads: the slot's old and new states and the per-edge flags.
struct ChunkContext<'a> {
    old: &'a SlotState,
    new: &'a SlotState,
    has_drm: bool,
    has_rgg: bool,
    plan: Option<LabelMethod>,
    table: &'a LabelTable,
    self_free: &'a [bool],
    verified: &'a [u8],
}

impl EdgeChunk<'_> {
    /// Applies the difference between the old and new states to this chunk's counters and
    /// relabels each edge whose counters changed; returns the number of label changes and
    /// the time spent on the DRM and the RGG difference.
    fn apply(&mut self, cx: &ChunkContext<'_>) -> (usize, Duration, Duration) {
        let n = self.labels.len();
        let mut changes = 0;
        let mut relabel = |c: &EdgeChunk<'_>, i: usize, labels: &mut [EdgeLabel]| {
            let e = c.base + i;
            let counters = (
                c.drm_hits.get(i).copied().unwrap_or(0),
                c.rgg_unknown.get(i).copied().unwrap_or(0),
                c.rgg_invalid.get(i).copied().unwrap_or(0),
            );
            let idx = label_index(
                cx.plan,
                cx.self_free.get(e).copied().unwrap_or(false),
                cx.verified.get(e).copied().unwrap_or(VERIFIED_NONE),
                counters,
            );
            let l = cx.table[idx];
            changes += (labels[i] != l) as usize;
            labels[i] = l;
        };
        let labels = std::mem::take(&mut self.labels);
        let t0 = Instant::now();
        if cx.has_drm {
            let w0 = self.base / 32;
            for w in w0..w0 + n.div_ceil(32) {
                let (was, is) = (word(&cx.old.drm, w), word(&cx.new.drm, w));
                let mut diff = was ^ is;
                while diff != 0 {
                    let k = diff.trailing_zeros();
                    diff &= diff - 1;
                    let i = w * 32 + k as usize - self.base;
                    if i >= n {
                        break;
                    }
                    // +1 when the new state lists the edge, -1 when the old one did.
                    self.drm_hits[i] = self.drm_hits[i]
                        .wrapping_add(((is >> k) & 1) * 2)
                        .wrapping_sub(1);
                    relabel(self, i, labels);
                }
            }
        }
        let t_drm = t0.elapsed();
        let t0 = Instant::now();
        if cx.has_rgg {
            let w0 = self.base / EDGES_PER_WORD;
            for w in w0..w0 + n.div_ceil(EDGES_PER_WORD) {
                let (was, is) = (word(&cx.old.rgg, w), word(&cx.new.rgg, w));
                let mut diff = was ^ is;
                while diff != 0 {
                    let k = diff.trailing_zeros() & !1;
                    diff &= !(3 << k);
                    let i = w * EDGES_PER_WORD + (k / 2) as usize - self.base;
                    if i >= n {
                        break;
                    }
                    // Branch-free: the old verdict's counter down, the new one's up.
                    let (v0, v1) = ((was >> k) & 3, (is >> k) & 3);
                    let (hit, near) = (HIT as u32, NEAR as u32);
                    self.rgg_invalid[i] = self.rgg_invalid[i]
                        .wrapping_add((v1 == hit) as u32)
                        .wrapping_sub((v0 == hit) as u32);
                    self.rgg_unknown[i] = self.rgg_unknown[i]
                        .wrapping_add((v1 == near) as u32)
                        .wrapping_sub((v0 == near) as u32);
                    relabel(self, i, labels);
                }
            }
        }
        let t_rgg = t0.elapsed();
        self.labels = labels;
        (changes, t_drm, t_rgg)
    }
}

/// True when edge `e` has a verdict other than free in packed verdicts.
fn listed(bits: &[u32], e: usize) -> bool {
    (word(bits, e / EDGES_PER_WORD) >> (2 * (e % EDGES_PER_WORD))) & 3 != 0
}

const VERIFIED_NONE: u8 = 0;
const VERIFIED_VALID: u8 = 1;
const VERIFIED_INVALID: u8 = 2;

/// A roadmap whose edge labels follow a changing scene. See the module docs.
#[derive(Clone, Debug)]
pub struct DynamicRoadmap {
    space: JointSpace,
    roadmap: Roadmap,
    nn: NearestNeighbors,
    opts: DynamicRoadmapOptions,
    self_free: Vec<bool>,
    rgg: Option<RggLayout>,
    engine: RggEngine,
    /// The layout resident on a GPU (shared by clones: it never changes after the build).
    cuda: Option<Arc<RggDevice>>,
    drm: Option<DrmMap>,
    /// How the voxel map was built.
    voxel_stats: Option<VoxelMapStats>,
    slots: Vec<Option<SlotState>>,
    drm_hits: Vec<u32>,
    rgg_unknown: Vec<u32>,
    rgg_invalid: Vec<u32>,
    verified: Vec<u8>,
    /// The edges whose `verified` entry may be set (each at most once; entries reset to
    /// none are dropped when next seen), so that an update visits these instead of every
    /// edge an obstacle touches.
    verified_edges: Vec<u32>,
    /// The label every roadmap edge carries, one byte each: updates compare against this
    /// compact copy and write the roadmap's (large) edge records only when a label changes.
    labels: Vec<EdgeLabel>,
    revision: Option<u64>,
    precompute_time: Duration,
}

fn check_options(o: &DynamicRoadmapOptions) -> Result<(), DynamicError> {
    let bad = |m: String| Err(DynamicError::Options(m));
    if !(o.resolution.is_finite() && o.resolution > 0.0) {
        return bad(format!("resolution must be positive, got {}", o.resolution));
    }
    if let Some(c) = o.drm_cell_size {
        if !(c.is_finite() && c > 0.0) {
            return bad(format!("drm_cell_size must be positive, got {c}"));
        }
    }
    if let Some((lo, hi)) = o.drm_bounds {
        if (0..3).any(|k| !(lo[k].is_finite() && hi[k].is_finite() && lo[k] < hi[k])) {
            return bad(format!("drm_bounds {lo:?}..{hi:?} are not a box"));
        }
    }
    if o.drm_cell_size.is_none() && !o.rgg {
        return bad("neither DRM nor RGG is enabled".into());
    }
    if !(o.min_capsule_radius_ratio > 0.0 && o.min_capsule_radius_ratio <= 1.0) {
        return bad(format!(
            "min_capsule_radius_ratio must be in (0, 1], got {}",
            o.min_capsule_radius_ratio
        ));
    }
    if !(o.tolerance.is_finite() && o.tolerance > 0.0) {
        return bad(format!("tolerance must be positive, got {}", o.tolerance));
    }
    if !(o.margin.is_finite() && o.margin >= 0.0) {
        return bad(format!("margin must be non-negative, got {}", o.margin));
    }
    if o.relabel_edges_per_worker == 0 {
        return bad("relabel_edges_per_worker must be at least 1".into());
    }
    Ok(())
}

fn threads(n: usize) -> usize {
    if n == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        n
    }
}

/// The voxel cells of every edge (`Sweep::run`'s `cell_counts` and `cells` for `sweep.grid`):
/// with `gpu` on the first GPU when one is usable (the identical cells; one line on stderr when
/// it is not), else on the CPU threads. `build_time` of the stats is left for the caller.
fn voxel_cells(
    sweep: &Sweep<'_>,
    n_edges: usize,
    threads: usize,
    gpu: bool,
) -> (Vec<u32>, Vec<u32>, VoxelMapStats) {
    let started = Instant::now();
    if let (true, Some(grid)) = (gpu, sweep.grid) {
        if crate::gpu::gpu_available() {
            let job = VoxelJob::new(
                sweep.model,
                sweep.bodies,
                sweep.motions,
                grid,
                sweep.params.inflate,
            );
            match crate::gpu::voxel::voxel_cells(&job, 0) {
                Ok((counts, cells, t)) => {
                    let st = VoxelMapStats {
                        engine: VoxelEngine::Cuda,
                        build_time: Duration::ZERO,
                        cells_time: started.elapsed(),
                        cuda: Some(t),
                    };
                    return (counts, cells, st);
                }
                Err(e) => eprintln!(
                    "gmp: dynamic roadmap voxel map on the CPU (the CUDA builder failed: {e})"
                ),
            }
        } else {
            eprintln!("gmp: dynamic roadmap voxel map on the CPU (no CUDA device found)");
        }
    }
    let started = Instant::now();
    let out = sweep_all(sweep, n_edges, threads);
    let st = VoxelMapStats {
        engine: VoxelEngine::Cpu,
        build_time: Duration::ZERO,
        cells_time: started.elapsed(),
        cuda: None,
    };
    (out.cell_counts, out.cells, st)
}

/// Runs the sweep over all edges, split into contiguous chunks over threads.
fn sweep_all(sweep: &Sweep<'_>, edges: usize, threads: usize) -> SweepOut {
    let threads = threads.clamp(1, 64).min(edges.max(1));
    if threads <= 1 || edges < 16 {
        return sweep.run(0..edges);
    }
    let chunk = edges.div_ceil(threads);
    let parts: Vec<SweepOut> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let r = (t * chunk).min(edges)..((t + 1) * chunk).min(edges);
                sc.spawn(move || sweep.run(r))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut out = SweepOut::default();
    for p in parts {
        out_append(&mut out, p);
    }
    out
}

fn out_append(out: &mut SweepOut, mut p: SweepOut) {
    out.obbs.append(&mut p.obbs);
    out.aabbs.append(&mut p.aabbs);
    out.cap_counts.append(&mut p.cap_counts);
    out.caps.append(&mut p.caps);
    out.cell_counts.append(&mut p.cell_counts);
    out.cells.append(&mut p.cells);
}

fn prefix(counts: &[u32]) -> Vec<u32> {
    let mut off = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u32;
    off.push(0);
    for &c in counts {
        acc = acc.saturating_add(c);
        off.push(acc);
    }
    off
}

/// Samples a roadmap: `vertices` configurations drawn uniformly in the joint limits that
/// `checker` accepts (use a checker of an empty scene for a roadmap free of self-collision
/// only), each joined to its `k` nearest neighbours by an Unknown edge. Deterministic for a
/// seed and checker.
pub fn sample_roadmap(
    checker: &dyn Checker,
    vertices: usize,
    k: usize,
    seed: u64,
) -> Result<(Roadmap, NearestNeighbors), DynamicError> {
    let space = checker.space().clone();
    let dof = space.dof();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut roadmap = Roadmap::new(dof);
    let mut nn = NearestNeighbors::new(&space)?;
    let mut tries = 0usize;
    while roadmap.num_vertices() < vertices {
        tries += 1;
        if tries > 1000 + 100 * vertices {
            return Err(DynamicError::Options(format!(
                "only {} of {vertices} valid vertices found",
                roadmap.num_vertices()
            )));
        }
        let want = (vertices - roadmap.num_vertices()).clamp(16, 4096);
        let mut batch = ConfigBatch::with_capacity(dof, want);
        let mut qs = Vec::with_capacity(want);
        for _ in 0..want {
            let q: Vec<f64> = (0..dof)
                .map(|j| {
                    let (lo, hi) = if space.continuous[j] {
                        (-std::f64::consts::PI, std::f64::consts::PI)
                    } else {
                        (space.lower[j], space.upper[j])
                    };
                    rng.random_range(lo..=hi)
                })
                .collect();
            batch.push(&q)?;
            qs.push(q);
        }
        for (q, ok) in qs.into_iter().zip(checker.check_configs(&batch)?) {
            if ok && roadmap.num_vertices() < vertices {
                let v = roadmap.add_vertex(&q)?;
                nn.insert(&q, v)?;
            }
        }
    }
    let mut pairs = std::collections::BTreeSet::new();
    for v in 0..roadmap.num_vertices() {
        let q = roadmap.vertex(v).map(<[f64]>::to_vec).unwrap_or_default();
        for n in nn.k_nearest(&q, k + 1)? {
            if n.id != v {
                pairs.insert((v.min(n.id), v.max(n.id)));
            }
        }
    }
    for (a, b) in pairs {
        let (Some(qa), Some(qb)) = (roadmap.vertex(a), roadmap.vertex(b)) else {
            continue;
        };
        let len = space.distance(qa, qb);
        roadmap.add_edge(a, b, len, EdgeLabel::Unknown)?;
    }
    Ok((roadmap, nn))
}

impl DynamicRoadmap {
    /// Builds the dynamic roadmap over `roadmap` (its labels are ignored) for `group` of
    /// `robot`, `base_state` supplying the other joints: checks every edge for self-collision,
    /// sweeps every edge and builds the voxel map and/or the RGG approximations. The scene is
    /// empty until the first [`DynamicRoadmap::update`].
    pub fn new(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        roadmap: Roadmap,
        opts: DynamicRoadmapOptions,
    ) -> Result<Self, DynamicError> {
        check_options(&opts)?;
        let started = Instant::now();
        let space = group.space.clone();
        if roadmap.dof() != space.dof() {
            return Err(DynamicError::Options(format!(
                "the roadmap has {}-joint vertices, the group {} joints",
                roadmap.dof(),
                space.dof()
            )));
        }
        let model = CollisionModel::build(
            robot,
            group,
            base_state,
            RobotShapes::Polytopes,
            opts.margin,
        )
        .map_err(DynamicError::Model)?;
        let mut nn = NearestNeighbors::new(&space)?;
        for v in 0..roadmap.num_vertices() {
            if let Some(q) = roadmap.vertex(v) {
                nn.insert(q, v)?;
            }
        }
        // Every edge as one motion batch (the layout of the checker and of the sweep).
        let mut motions = MotionBatch::new(space.dof());
        for e in roadmap.edges() {
            let (Some(qa), Some(qb)) = (roadmap.vertex(e.a), roadmap.vertex(e.b)) else {
                return Err(RoadmapError::NoSuchVertex {
                    index: e.a.max(e.b),
                    len: roadmap.num_vertices(),
                }
                .into());
            };
            motions.push(qa, qb)?;
        }
        let checker_opts = CheckerOptions {
            shapes: RobotShapes::Polytopes,
            margin: opts.margin,
            threads: opts.threads,
        };
        // Self-collision does not depend on obstacles: one exact check of every edge.
        let empty = make_checker(
            if opts.gpu { "auto" } else { "cpu" },
            robot,
            group,
            base_state,
            &Scene::default(),
            checker_opts,
        )?;
        let self_free = empty.check_motions(&motions, opts.resolution)?;
        drop(empty);
        let prepared = prepare_motions(&space, &motions, opts.resolution)?;
        let tol = opts.tolerance as f32;
        let locals = BodyLocal::of_model(&model, opts.inner_spheres_per_body, tol);
        let params = SweepParams {
            inflate: opts.margin + tol,
            min_radius_ratio: opts.min_capsule_radius_ratio as f32,
            max_span: opts.max_capsule_span.max(1),
            rgg: opts.rgg,
            boxes_per_body: opts.boxes_per_body.max(1),
        };
        let n_edges = roadmap.num_edges();
        let nthreads = threads(opts.threads);
        let fixed_grid = match (opts.drm_cell_size, opts.drm_bounds) {
            (Some(cell), Some((lo, hi))) => Some(make_grid(cell, lo, hi)?),
            _ => None,
        };
        let mut sweep = Sweep {
            model: &model,
            bodies: &locals,
            motions: &prepared,
            params,
            grid: None,
        };
        // The RGG approximations, and the edges' bounding boxes that bound the voxel grid when
        // no bounds are given.
        let first = if opts.rgg || (opts.drm_cell_size.is_some() && fixed_grid.is_none()) {
            sweep_all(&sweep, n_edges, nthreads)
        } else {
            SweepOut::default()
        };
        // The voxel map: its own pass over the edges, on the CPU threads or the GPU.
        let map_started = Instant::now();
        let grid = match (opts.drm_cell_size, fixed_grid) {
            (None, _) => None,
            (Some(_), Some(g)) => Some(g),
            (Some(cell), None) => {
                let mut all = Aabb::EMPTY;
                for b in &first.aabbs {
                    all.grow(b);
                }
                let (lo, hi) = if n_edges == 0 {
                    ([0.0; 3], [1.0; 3])
                } else {
                    (all.lo.map(|v| v as f64), all.hi.map(|v| v as f64))
                };
                Some(make_grid(cell, lo, hi)?)
            }
        };
        let mut voxel_stats = None;
        let drm = match grid {
            None => None,
            Some(g) => {
                sweep.grid = Some(g);
                sweep.params.rgg = false;
                let (cell_counts, cells, mut st) = voxel_cells(&sweep, n_edges, nthreads, opts.gpu);
                let map = build_drm(g, n_edges, &cell_counts, &cells);
                st.build_time = map_started.elapsed();
                voxel_stats = Some(st);
                Some(map)
            }
        };
        let rgg = opts.rgg.then(|| {
            RggLayout::new(
                locals.len(),
                params.boxes_per_body,
                n_edges,
                first.obbs,
                &first.cap_counts,
                first.caps,
                nthreads,
            )
        });
        let mut me = Self {
            space,
            roadmap,
            nn,
            self_free,
            rgg,
            engine: RggEngine::Bvh,
            cuda: None,
            drm,
            voxel_stats,
            slots: Vec::new(),
            drm_hits: vec![0; n_edges],
            rgg_unknown: vec![0; n_edges],
            rgg_invalid: vec![0; n_edges],
            verified: vec![VERIFIED_NONE; n_edges],
            verified_edges: Vec::new(),
            labels: vec![EdgeLabel::Unknown; n_edges],
            revision: None,
            precompute_time: Duration::ZERO,
            opts,
        };
        for e in 0..n_edges {
            me.labels[e] = me.effective(e);
        }
        if me.opts.gpu && me.rgg.is_some() {
            if crate::gpu::gpu_available() {
                if let Err(e) = me.set_rgg_engine(RggEngine::Cuda) {
                    eprintln!("gmp: dynamic roadmap labels on the CPU (the CUDA engine could not start: {e})");
                }
            } else {
                eprintln!("gmp: dynamic roadmap labels on the CPU (no CUDA device found)");
            }
        }
        me.precompute_time = started.elapsed();
        Ok(me)
    }

    /// Builds the dynamic roadmap over the roadmap of a persistent [`Prm`].
    pub fn from_prm(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        prm: &Prm,
        opts: DynamicRoadmapOptions,
    ) -> Result<Self, DynamicError> {
        Self::new(robot, group, base_state, prm.roadmap().clone(), opts)
    }

    /// Samples a roadmap of `vertices` self-collision-free configurations joined to their
    /// `k` nearest neighbours (see [`sample_roadmap`]) and builds the dynamic roadmap on it.
    pub fn sample(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        vertices: usize,
        k: usize,
        seed: u64,
        opts: DynamicRoadmapOptions,
    ) -> Result<Self, DynamicError> {
        check_options(&opts)?;
        let checker_opts = CheckerOptions {
            shapes: RobotShapes::Polytopes,
            margin: opts.margin,
            threads: opts.threads,
        };
        let empty = CpuChecker::new(robot, group, base_state, &Scene::default(), checker_opts)?;
        let (roadmap, _) = sample_roadmap(&empty, vertices, k, seed)?;
        Self::new(robot, group, base_state, roadmap, opts)
    }

    /// The roadmap's graph (vertices, edges, lengths). The labels of its edge records are
    /// not kept up to date (an update would have to write every changed label into the large
    /// edge records): the effective labels are [`DynamicRoadmap::edge_label`],
    /// [`DynamicRoadmap::export_labels`] and [`DynamicRoadmap::labelled_roadmap`].
    pub fn roadmap(&self) -> &Roadmap {
        &self.roadmap
    }

    /// A copy of the roadmap whose edges carry the effective labels (e.g. to save it).
    pub fn labelled_roadmap(&self) -> Roadmap {
        let mut r = self.roadmap.clone();
        for (e, &l) in self.labels.iter().enumerate() {
            // The labels are one per edge of this roadmap, so every index exists.
            let _ = r.set_label(e, l);
        }
        r
    }

    /// The joint space.
    pub fn space(&self) -> &JointSpace {
        &self.space
    }

    /// The options.
    pub fn options(&self) -> &DynamicRoadmapOptions {
        &self.opts
    }

    /// The DRM grid, when built.
    pub fn grid(&self) -> Option<&Grid> {
        self.drm.as_ref().map(|d| &d.grid)
    }

    /// Time the build took (self-collision check, sweep, maps).
    pub fn precompute_time(&self) -> Duration {
        self.precompute_time
    }

    /// The DRM voxel map, when built.
    pub fn voxel_map(&self) -> Option<VoxelMap<'_>> {
        self.drm.as_ref().map(|d| VoxelMap {
            grid: &d.grid,
            offsets: &d.offsets,
            edges: &d.edges,
        })
    }

    /// Where and how fast the DRM voxel map was built, when it was.
    pub fn voxel_map_stats(&self) -> Option<VoxelMapStats> {
        self.voxel_stats
    }

    /// Sizes of the precomputed data: (voxel map entries, RGG outer boxes, RGG capsules).
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.drm.as_ref().map_or(0, |d| d.edges.len()),
            self.rgg.as_ref().map_or(0, |r| r.obbs.len()),
            self.rgg.as_ref().map_or(0, |r| r.caps.len()),
        )
    }

    /// True when edge `e` is in self-collision (Invalid whatever the scene).
    pub fn self_collision(&self, e: usize) -> bool {
        !self.self_free.get(e).copied().unwrap_or(false)
    }

    /// The label method queries use (the preferred one when built, else the other).
    pub fn plan_method(&self) -> LabelMethod {
        match self.opts.plan_with {
            LabelMethod::Rgg if self.rgg.is_some() => LabelMethod::Rgg,
            LabelMethod::Drm if self.drm.is_some() => LabelMethod::Drm,
            _ if self.rgg.is_some() => LabelMethod::Rgg,
            _ => LabelMethod::Drm,
        }
    }

    /// The label of edge `e` by `method` alone (no lazy validation results); `None` when
    /// the method was not built or the edge does not exist.
    pub fn method_label(&self, method: LabelMethod, e: usize) -> Option<EdgeLabel> {
        if e >= self.roadmap.num_edges() {
            return None;
        }
        if self.self_collision(e) {
            return Some(EdgeLabel::Invalid);
        }
        match method {
            LabelMethod::Drm => {
                self.drm.as_ref()?;
                Some(if self.drm_hits[e] > 0 {
                    EdgeLabel::Unknown
                } else {
                    EdgeLabel::Valid
                })
            }
            LabelMethod::Rgg => {
                self.rgg.as_ref()?;
                Some(if self.rgg_invalid[e] > 0 {
                    EdgeLabel::Invalid
                } else if self.rgg_unknown[e] > 0 {
                    EdgeLabel::Unknown
                } else {
                    EdgeLabel::Valid
                })
            }
        }
    }

    /// Labels of every edge by `method` alone; `None` when the method was not built.
    pub fn labels(&self, method: LabelMethod) -> Option<Vec<EdgeLabel>> {
        (0..self.roadmap.num_edges())
            .map(|e| self.method_label(method, e))
            .collect()
    }

    /// Label counts of `method` alone; `None` when the method was not built.
    pub fn label_counts(&self, method: LabelMethod) -> Option<LabelCounts> {
        let mut c = LabelCounts::default();
        for e in 0..self.roadmap.num_edges() {
            match self.method_label(method, e)? {
                EdgeLabel::Valid => c.valid += 1,
                EdgeLabel::Invalid => c.invalid += 1,
                EdgeLabel::Unknown => c.unknown += 1,
            }
        }
        Some(c)
    }

    /// The query method when it was built (else queries see every edge Unknown).
    fn built_plan_method(&self) -> Option<LabelMethod> {
        let m = self.plan_method();
        let built = match m {
            LabelMethod::Drm => self.drm.is_some(),
            LabelMethod::Rgg => self.rgg.is_some(),
        };
        built.then_some(m)
    }

    /// The label queries go by: the lazy validation result while it holds, else the
    /// query method's label.
    fn effective(&self, e: usize) -> EdgeLabel {
        let plan = self.built_plan_method();
        let at = |v: &[u32]| v.get(e).copied().unwrap_or(0);
        let idx = label_index(
            plan,
            !self.self_collision(e),
            self.verified.get(e).copied().unwrap_or(VERIFIED_NONE),
            (
                at(&self.drm_hits),
                at(&self.rgg_unknown),
                at(&self.rgg_invalid),
            ),
        );
        label_table(plan)[idx]
    }

    /// Effective label counts (the labels queries go by).
    pub fn effective_counts(&self) -> LabelCounts {
        let mut c = LabelCounts::default();
        for l in &self.labels {
            match l {
                EdgeLabel::Valid => c.valid += 1,
                EdgeLabel::Invalid => c.invalid += 1,
                EdgeLabel::Unknown => c.unknown += 1,
            }
        }
        c
    }

    /// Edges with their effective labels, for drawing: `(a, b, label)`.
    pub fn export_labels(&self) -> Vec<(usize, usize, EdgeLabel)> {
        self.roadmap
            .edges()
            .iter()
            .zip(&self.labels)
            .map(|(e, &l)| (e.a, e.b, l))
            .collect()
    }

    /// The effective label of edge `e` (`None`: no such edge).
    pub fn edge_label(&self, e: usize) -> Option<EdgeLabel> {
        self.labels.get(e).copied()
    }

    /// The colour of a label for markers (RGBA): green, red, gray.
    pub fn label_color(label: EdgeLabel) -> [f32; 4] {
        match label {
            EdgeLabel::Valid => [0.1, 0.8, 0.2, 1.0],
            EdgeLabel::Invalid => [0.9, 0.1, 0.1, 1.0],
            EdgeLabel::Unknown => [0.55, 0.55, 0.55, 0.6],
        }
    }

    /// Brings the labels up to date with `scene`: only the obstacle slots changed since the
    /// last update are processed (all of them on the first update or when the scene's
    /// change log no longer reaches back). The scene's frame must be the robot's base frame.
    pub fn update(&mut self, scene: &Scene) -> Result<UpdateStats, DynamicError> {
        self.update_with(scene, &|_| false)
    }

    /// [`Self::update`] where some obstacles may be touched by some links (allowed
    /// collisions): for an obstacle `may_touch` holds for, an RGG verdict "in collision"
    /// becomes "unknown", so that the lazy validation of a query (whose checker knows which
    /// contacts are allowed) decides those edges; voxel (DRM) verdicts are left as they are
    /// (conservative). `may_touch` must not change for an obstacle while the obstacle does:
    /// rebuild the roadmap when the allowed collisions change.
    pub fn update_with(
        &mut self,
        scene: &Scene,
        may_touch: &dyn Fn(&Obstacle) -> bool,
    ) -> Result<UpdateStats, DynamicError> {
        let mut stats = UpdateStats::default();
        let changed: Vec<usize> = match self
            .revision
            .and_then(|r| scene.changes_since(r).map(|log| (r, log)))
        {
            Some((_, log)) => {
                let mut v: Vec<usize> = log
                    .iter()
                    .map(|(_, c)| match c {
                        SceneChange::Added { slot }
                        | SceneChange::Moved { slot }
                        | SceneChange::Replaced { slot }
                        | SceneChange::Removed { slot } => *slot,
                    })
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => {
                stats.full_resync = true;
                (0..self.slots.len().max(scene.slots().len())).collect()
            }
        };
        for slot in changed {
            stats.slots += 1;
            let old = self
                .slots
                .get_mut(slot)
                .and_then(Option::take)
                .unwrap_or_default();
            let t0 = Instant::now();
            let new = match scene.slots().get(slot) {
                Some(Some(o)) => {
                    let mut state = self.slot_state(o, &mut stats);
                    if may_touch(o) {
                        // HIT (0b11) -> NEAR (0b01) in every two-bit field; FREE and NEAR stay.
                        state.rgg.iter_mut().for_each(|w| *w &= 0x5555_5555);
                    }
                    Some(state)
                }
                _ => None,
            };
            stats.labelling_time += t0.elapsed();
            let t0 = Instant::now();
            self.replace_slot(&old, new.as_ref(), &mut stats);
            stats.bookkeeping_time += t0.elapsed();
            if let Some(new) = new {
                if self.slots.len() <= slot {
                    self.slots.resize(slot + 1, None);
                }
                self.slots[slot] = Some(new);
            }
        }
        self.revision = Some(scene.revision());
        Ok(stats)
    }

    /// What obstacle `o` contributes: the edges of its voxel cells (DRM) and its RGG verdicts.
    fn slot_state(&mut self, o: &Obstacle, stats: &mut UpdateStats) -> SlotState {
        let tol = self.opts.tolerance as f32;
        let approx = approximate(o, tol, self.opts.obstacle_inner_per_axis);
        let mut state = SlotState::default();
        if self.drm.is_some() {
            let t0 = Instant::now();
            state.drm = self.drm_edges(&approx);
            stats.drm_candidates += state
                .drm
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>();
            stats.drm_time += t0.elapsed();
        }
        if self.rgg.is_some() {
            let t0 = Instant::now();
            let (verdicts, tested) = self.rgg_classify(&approx);
            stats.rgg_candidates += tested;
            stats.rgg_listed += count_listed(&verdicts);
            state.rgg = verdicts;
            stats.rgg_time += t0.elapsed();
        }
        state
    }

    /// Replaces the contribution `old` of a slot by `new` (`None`: the slot is now empty) in
    /// the counters and relabels the edges concerned. Both states are bitmaps over the
    /// edges, so a word-by-word comparison finds the edges whose counters change (usually far
    /// fewer than the edges either state lists); each is relabelled as its counters change.
    /// Then the lazy validation results of edges that either state lists are dropped (an
    /// obstacle that may touch them changed) and those edges relabelled. An edge listed by
    /// both states with the same verdict and no validation result keeps its label.
    fn replace_slot(&mut self, old: &SlotState, new: Option<&SlotState>, stats: &mut UpdateStats) {
        let empty = SlotState::default();
        let new = new.unwrap_or(&empty);
        let plan = self.built_plan_method();
        let table = label_table(plan);
        let n = self.labels.len();
        // Counters exist for the built methods only; the others are empty and stay so.
        let (has_drm, has_rgg) = (
            self.drm.is_some() && self.drm_hits.len() == n,
            self.rgg.is_some() && self.rgg_unknown.len() == n && self.rgg_invalid.len() == n,
        );
        let workers = threads(self.opts.threads)
            .min(n / self.opts.relabel_edges_per_worker.max(1))
            .max(1);
        let per = n.div_ceil(workers).div_ceil(32) * 32;
        let Self {
            self_free,
            verified,
            verified_edges,
            drm_hits,
            rgg_unknown,
            rgg_invalid,
            labels,
            ..
        } = self;
        let cx = ChunkContext {
            old,
            new,
            has_drm,
            has_rgg,
            plan,
            table: &table,
            self_free,
            verified,
        };
        // Split every per-edge array at the same edges (the arrays of a method that was not
        // built are empty: their chunks are empty).
        let mut chunks = Vec::with_capacity(workers);
        let (mut h, mut u, mut v, mut l) = (
            &mut drm_hits[..],
            &mut rgg_unknown[..],
            &mut rgg_invalid[..],
            &mut labels[..],
        );
        let mut base = 0;
        while base < n {
            let len = per.min(n - base);
            let cut = [h.len(), u.len(), v.len()].map(|x| len.min(x));
            let (h0, h1) = std::mem::take(&mut h).split_at_mut(cut[0]);
            let (u0, u1) = std::mem::take(&mut u).split_at_mut(cut[1]);
            let (v0, v1) = std::mem::take(&mut v).split_at_mut(cut[2]);
            let (l0, l1) = std::mem::take(&mut l).split_at_mut(len);
            chunks.push(EdgeChunk {
                base,
                drm_hits: h0,
                rgg_unknown: u0,
                rgg_invalid: v0,
                labels: l0,
            });
            (h, u, v, l) = (h1, u1, v1, l1);
            base += len;
        }
        let parts: Vec<(usize, Duration, Duration)> = if chunks.len() > 1 {
            std::thread::scope(|sc| {
                let cx = &cx;
                let handles: Vec<_> = chunks
                    .iter_mut()
                    .map(|c| sc.spawn(move || c.apply(cx)))
                    .collect();
                // A worker panics only on a bug: pass it on rather than half-update.
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        } else {
            chunks.iter_mut().map(|c| c.apply(&cx)).collect()
        };
        for (changes, t_drm, t_rgg) in parts {
            stats.relabelled += changes;
            stats.drm_time += t_drm;
            stats.rgg_time += t_rgg;
        }
        // Lazy validation results of edges either state may touch are dropped.
        let mut dropped = Vec::new();
        verified_edges.retain(|&e| {
            let e = e as usize;
            if verified.get(e).is_none_or(|&v| v == VERIFIED_NONE) {
                return false;
            }
            let near = marked(&old.drm, e)
                || marked(&new.drm, e)
                || listed(&old.rgg, e)
                || listed(&new.rgg, e);
            if near {
                verified[e] = VERIFIED_NONE;
                dropped.push(e);
            }
            !near
        });
        let at = |v: &[u32], e: usize| v.get(e).copied().unwrap_or(0);
        for e in dropped {
            let idx = label_index(
                plan,
                self_free.get(e).copied().unwrap_or(false),
                VERIFIED_NONE,
                (at(drm_hits, e), at(rgg_unknown, e), at(rgg_invalid, e)),
            );
            if let Some(x) = labels.get_mut(e) {
                stats.relabelled += (*x != table[idx]) as usize;
                *x = table[idx];
            }
        }
        stats.drm_candidates += old
            .drm
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>();
        stats.rgg_listed += count_listed(&old.rgg);
    }

    /// Edges listed in the cells the obstacle's box touches, as a bitmap (one bit per edge).
    fn drm_edges(&mut self, approx: &ObstacleApprox) -> Vec<u32> {
        let Some(drm) = self.drm.as_ref() else {
            return Vec::new();
        };
        let mut cells = Vec::new();
        drm.grid.cells_of(&approx.outer, &mut cells);
        let mut out = vec![0u32; self.roadmap.num_edges().div_ceil(32)];
        for c in cells {
            let (a, b) = (
                drm.offsets[c as usize] as usize,
                drm.offsets[c as usize + 1] as usize,
            );
            for &e in &drm.edges[a..b] {
                if let Some(w) = out.get_mut(e as usize / 32) {
                    *w |= 1 << (e % 32);
                }
            }
        }
        out
    }

    /// RGG verdicts of every edge against one obstacle with the current engine, and the
    /// number of (edge, body) pairs tested. A CUDA failure switches the engine to the BVH for
    /// good (one line on stderr) and the BVH answers: the verdicts are the same. Packed: the
    /// CUDA engine's words come as they are, the CPU engines' lists are packed.
    fn rgg_classify(&mut self, approx: &ObstacleApprox) -> (VerdictBits, usize) {
        let Some(rgg) = self.rgg.as_ref() else {
            return (Vec::new(), 0);
        };
        match (self.engine, self.cuda.as_ref()) {
            (RggEngine::Cuda, Some(dev)) => match dev.verdicts(approx) {
                Ok(v) => return (v, rgg.pairs()),
                Err(e) => {
                    eprintln!("gmp: dynamic roadmap labels move to the CPU (CUDA engine: {e})");
                    self.engine = RggEngine::Bvh;
                }
            },
            (RggEngine::BruteForce, _) => {
                let threads = threads(self.opts.threads);
                let v = rgg.verdicts_brute_force(approx, threads);
                return (pack_verdicts(rgg.edges, &v), rgg.pairs());
            }
            _ => {}
        }
        let (v, tested) = rgg.verdicts(approx);
        (pack_verdicts(rgg.edges, &v), tested)
    }

    /// The engine label updates use.
    pub fn rgg_engine(&self) -> RggEngine {
        self.engine
    }

    /// Chooses the engine of label updates. [`RggEngine::Cuda`] uploads the approximations to
    /// the first GPU once (shared with clones of this roadmap) and fails when no GPU is usable
    /// or the RGG approximations were not built.
    pub fn set_rgg_engine(&mut self, engine: RggEngine) -> Result<(), DynamicError> {
        if engine == RggEngine::Cuda && self.cuda.is_none() {
            let Some(rgg) = self.rgg.as_ref() else {
                return Err(DynamicError::Options(
                    "the CUDA engine needs the RGG approximations (rgg: true)".into(),
                ));
            };
            self.cuda = Some(Arc::new(RggDevice::new(rgg, 0)?));
        }
        self.engine = engine;
        Ok(())
    }

    /// Timings of the CUDA engine's last verdict pass, once attached.
    pub fn cuda_timings(&self) -> Option<RggTimings> {
        self.cuda.as_ref().map(|d| d.last_timings())
    }

    /// The name of the GPU the CUDA engine runs on, once attached.
    pub fn cuda_device(&self) -> Option<&str> {
        self.cuda.as_ref().map(|d| d.device_name())
    }

    /// The RGG labels `obstacle` alone gives, computed by `engine` without touching the
    /// roadmap: every edge whose outer approximations may touch it, ascending, as
    /// [`EdgeLabel::Unknown`] or (inner approximations overlap) [`EdgeLabel::Invalid`]; the
    /// others are Valid for it. [`RggEngine::Cuda`] needs [`DynamicRoadmap::set_rgg_engine`]
    /// to have attached the GPU. For tests and benchmarks: all engines must agree.
    pub fn rgg_verdicts(
        &self,
        obstacle: &Obstacle,
        engine: RggEngine,
    ) -> Result<Vec<(usize, EdgeLabel)>, DynamicError> {
        let Some(rgg) = self.rgg.as_ref() else {
            return Err(DynamicError::Options(
                "the RGG approximations were not built (rgg: false)".into(),
            ));
        };
        let approx = approximate(
            obstacle,
            self.opts.tolerance as f32,
            self.opts.obstacle_inner_per_axis,
        );
        let v = match engine {
            RggEngine::Bvh => rgg.verdicts(&approx).0,
            RggEngine::BruteForce => rgg.verdicts_brute_force(&approx, threads(self.opts.threads)),
            RggEngine::Cuda => match self.cuda.as_ref() {
                Some(dev) => unpack_verdicts(rgg.edges, &dev.verdicts(&approx)?),
                None => {
                    return Err(DynamicError::Options(
                        "the CUDA engine is not attached (set_rgg_engine(RggEngine::Cuda))".into(),
                    ))
                }
            },
        };
        Ok(v.into_iter()
            .map(|(e, inv)| {
                let l = if inv {
                    EdgeLabel::Invalid
                } else {
                    EdgeLabel::Unknown
                };
                (e as usize, l)
            })
            .collect())
    }

    /// Finds a path from `start` to `goal` over edges not known to be invalid, checking the
    /// unknown edges of each candidate path with `checker` in one batch until a candidate is
    /// all valid (lazy PRM). A start or goal that is not a roadmap vertex is joined to its
    /// nearest vertices by connections that are checked the same way. `checker` must reflect
    /// the scene of the last [`DynamicRoadmap::update`], with this roadmap's margin.
    pub fn search(
        &mut self,
        checker: &dyn Checker,
        start: &[f64],
        goal: &[f64],
    ) -> Result<RoadmapPath, PlanError> {
        if checker.space() != &self.space {
            return Err(PlanError::RoadmapMismatch {
                roadmap: self.space.names.join(", "),
                checker: checker.space().names.join(", "),
            });
        }
        self.space
            .validate(start)
            .map_err(PlanError::InvalidStart)?;
        self.space.validate(goal).map_err(PlanError::InvalidGoal)?;
        let n = self.roadmap.num_vertices();
        let ne = self.roadmap.num_edges();
        // Augmented graph: virtual start n, virtual goal n + 1, connection edges ne...
        let mut ends = [n, n + 1];
        let mut conns: Vec<(usize, usize, f64)> = Vec::new();
        let mut conn_label: Vec<EdgeLabel> = Vec::new();
        for (i, q) in [start, goal].into_iter().enumerate() {
            if let Some(nb) = self.nn.nearest(q)? {
                if nb.distance == 0.0 {
                    ends[i] = nb.id;
                    continue;
                }
            }
            for nb in self.nn.k_nearest(q, self.opts.connect_neighbors.max(1))? {
                conns.push((n + i, nb.id, nb.distance));
                conn_label.push(EdgeLabel::Unknown);
            }
        }
        if ends[0] == ends[1] {
            return Ok(RoadmapPath {
                configs: vec![start.to_vec(), goal.to_vec()],
                vertices: vec![Some(ends[0]), Some(ends[1])],
                edges: vec![None],
                cost: 0.0,
                rounds: 0,
                edges_checked: 0,
            });
        }
        if ends[0] == n && ends[1] == n + 1 {
            conns.push((n, n + 1, self.space.distance(start, goal)));
            conn_label.push(EdgeLabel::Unknown);
        }
        let mut rounds = 0;
        let mut checked = 0;
        loop {
            rounds += 1;
            let found = self.astar(ends[0], ends[1], goal, &conns, &conn_label, start);
            let Some((verts, edges, cost)) = found else {
                return Err(PlanError::NoPath {
                    planner: PlannerId::LazyPrm,
                    time_limit: Duration::ZERO,
                    iterations: rounds,
                    vertices: n,
                });
            };
            let unknown: Vec<usize> = edges
                .iter()
                .copied()
                .filter(|&e| {
                    if e < ne {
                        self.labels[e] == EdgeLabel::Unknown
                    } else {
                        conn_label[e - ne] == EdgeLabel::Unknown
                    }
                })
                .collect();
            if unknown.is_empty() {
                let configs = verts
                    .iter()
                    .map(|&v| {
                        if v == n {
                            start.to_vec()
                        } else if v == n + 1 {
                            goal.to_vec()
                        } else {
                            self.roadmap
                                .vertex(v)
                                .map(<[f64]>::to_vec)
                                .unwrap_or_default()
                        }
                    })
                    .collect();
                return Ok(RoadmapPath {
                    configs,
                    vertices: verts.iter().map(|&v| (v < n).then_some(v)).collect(),
                    edges: edges.iter().map(|&e| (e < ne).then_some(e)).collect(),
                    cost,
                    rounds,
                    edges_checked: checked,
                });
            }
            let mut motions = MotionBatch::new(self.space.dof());
            for &e in &unknown {
                let (a, b) = if e < ne {
                    let x = &self.roadmap.edges()[e];
                    (x.a, x.b)
                } else {
                    (conns[e - ne].0, conns[e - ne].1)
                };
                let qa = if a == n {
                    start.to_vec()
                } else if a == n + 1 {
                    goal.to_vec()
                } else {
                    self.roadmap
                        .vertex(a)
                        .map(<[f64]>::to_vec)
                        .unwrap_or_default()
                };
                let qb = if b == n {
                    start.to_vec()
                } else if b == n + 1 {
                    goal.to_vec()
                } else {
                    self.roadmap
                        .vertex(b)
                        .map(<[f64]>::to_vec)
                        .unwrap_or_default()
                };
                motions.push(&qa, &qb)?;
            }
            let verdicts = checker.check_motions(&motions, self.opts.resolution)?;
            checked += unknown.len();
            for (k, &e) in unknown.iter().enumerate() {
                let ok = verdicts.get(k).copied().unwrap_or(false);
                let l = if ok {
                    EdgeLabel::Valid
                } else {
                    EdgeLabel::Invalid
                };
                if e < ne {
                    if self.verified[e] == VERIFIED_NONE {
                        self.verified_edges.push(e as u32);
                    }
                    self.verified[e] = if ok { VERIFIED_VALID } else { VERIFIED_INVALID };
                    self.labels[e] = l;
                } else {
                    conn_label[e - ne] = l;
                }
            }
        }
    }

    /// A* over the roadmap plus the connections (`conns[i]` is edge `ne + i`), over edges
    /// not labelled Invalid; heuristic: joint-space distance to `goal`. Ties by vertex index.
    fn astar(
        &self,
        s: usize,
        g: usize,
        goal: &[f64],
        conns: &[(usize, usize, f64)],
        conn_label: &[EdgeLabel],
        start: &[f64],
    ) -> Option<(Vec<usize>, Vec<usize>, f64)> {
        use std::cmp::Ordering;
        use std::collections::BinaryHeap;
        #[derive(PartialEq)]
        struct Open(f64, usize);
        impl Eq for Open {}
        impl Ord for Open {
            fn cmp(&self, o: &Self) -> Ordering {
                o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
            }
        }
        impl PartialOrd for Open {
            fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
                Some(self.cmp(o))
            }
        }
        let n = self.roadmap.num_vertices();
        let ne = self.roadmap.num_edges();
        let total = n + 2;
        let h = |v: usize| -> f64 {
            if v == n + 1 {
                0.0
            } else if v == n {
                self.space.distance(start, goal)
            } else {
                self.roadmap
                    .vertex(v)
                    .map_or(0.0, |q| self.space.distance(q, goal))
            }
        };
        let mut dist = vec![f64::INFINITY; total];
        let mut via: Vec<Option<usize>> = vec![None; total];
        let mut closed = vec![false; total];
        let mut heap = BinaryHeap::new();
        dist[s] = 0.0;
        heap.push(Open(h(s), s));
        while let Some(Open(_, v)) = heap.pop() {
            if closed[v] {
                continue;
            }
            closed[v] = true;
            if v == g {
                break;
            }
            let mut relax = |e: usize, w: usize, len: f64, heap: &mut BinaryHeap<Open>| {
                let d = dist[v] + len;
                if d < dist[w] {
                    dist[w] = d;
                    via[w] = Some(e);
                    heap.push(Open(d + h(w), w));
                }
            };
            if v < n {
                for &e in self.roadmap.incident(v) {
                    let edge = &self.roadmap.edges()[e];
                    if self.labels[e] != EdgeLabel::Invalid {
                        relax(e, edge.other(v), edge.length, &mut heap);
                    }
                }
            }
            for (i, &(a, b, len)) in conns.iter().enumerate() {
                if conn_label[i] == EdgeLabel::Invalid || (a != v && b != v) {
                    continue;
                }
                relax(ne + i, if a == v { b } else { a }, len, &mut heap);
            }
        }
        if !closed[g] {
            return None;
        }
        let mut verts = vec![g];
        let mut edges = Vec::new();
        let mut v = g;
        while let Some(e) = via[v] {
            edges.push(e);
            v = if e < ne {
                self.roadmap.edges()[e].other(v)
            } else {
                let (a, b, _) = conns[e - ne];
                if a == v {
                    b
                } else {
                    a
                }
            };
            verts.push(v);
            if edges.len() > total {
                return None;
            }
        }
        verts.reverse();
        edges.reverse();
        Some((verts, edges, dist[g]))
    }

    /// Plans with the roadmap: [`DynamicRoadmap::search`] inside the common planning frame
    /// (request checks, start and goal validity, shortcutting, time parameterization and
    /// re-validation at `req.resolution`). The result reports `req.planner` as its planner
    /// (use [`PlannerId::LazyPrm`], the search this is).
    pub fn plan(
        &mut self,
        checker: &dyn Checker,
        req: &PlanRequest,
    ) -> Result<PlanResult, PlanError> {
        if !req.other_goals.is_empty() {
            // A goal set: its goals one after another.
            return plan_each_goal(checker.space(), req, |one| self.plan(checker, one));
        }
        let vertices = self.roadmap.num_vertices();
        let edges = self.roadmap.num_edges();
        run(checker, req, |ctx| {
            let p = self.search(ctx.checker, &ctx.req.start, &ctx.req.goal)?;
            Ok(RawSolution {
                path: p.configs,
                iterations: p.rounds,
                vertices,
                edges,
                cost_over_time: Vec::new(),
            })
        })
    }
}

fn make_grid(cell: f64, lo: [f64; 3], hi: [f64; 3]) -> Result<Grid, DynamicError> {
    let dims = [0, 1, 2].map(|k| ((hi[k] - lo[k]) / cell).ceil().max(1.0));
    if dims.iter().product::<f64>() > 64.0 * 1024.0 * 1024.0 {
        return Err(DynamicError::Options(format!(
            "a voxel grid of {dims:?} cells is too large; use larger cells"
        )));
    }
    Ok(Grid {
        origin: lo.map(|v| v as f32),
        cell: cell as f32,
        dims: dims.map(|d| d as u32),
    })
}

/// Inverts the edge -> cells lists into cell -> edges (CSR, edges ascending per cell).
fn build_drm(grid: Grid, n_edges: usize, cell_counts: &[u32], cells: &[u32]) -> DrmMap {
    let nc = grid.len();
    let mut counts = vec![0u32; nc];
    for &c in cells {
        counts[c as usize] += 1;
    }
    let offsets = prefix(&counts);
    let mut fill: Vec<u32> = offsets[..nc].to_vec();
    let mut edges = vec![0u32; cells.len()];
    let mut k = 0usize;
    for (e, &cnt) in cell_counts.iter().enumerate().take(n_edges) {
        for &c in &cells[k..k + cnt as usize] {
            edges[fill[c as usize] as usize] = e as u32;
            fill[c as usize] += 1;
        }
        k += cnt as usize;
    }
    DrmMap {
        grid,
        offsets,
        edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_lookups_read_the_right_fields_and_zero_past_the_end() {
        let drm = vec![0b1010u32, 1 << 31];
        assert!(marked(&drm, 1) && marked(&drm, 3) && marked(&drm, 63));
        assert!(!marked(&drm, 0) && !marked(&drm, 32) && !marked(&drm, 64));
        let rgg = pack_verdicts(40, &vec![(2, true), (17, false)]);
        assert!(listed(&rgg, 2) && listed(&rgg, 17));
        assert!(!listed(&rgg, 1) && !listed(&rgg, 16) && !listed(&rgg, 1000));
        assert_eq!(word(&rgg, 99), 0);
    }
}
