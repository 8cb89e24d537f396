//! The CUDA builder of the dynamic roadmap's DRM voxel map (`kernels/drm.cu`: `drm_voxel_mark`,
//! `drm_voxel_count`, `drm_voxel_list`).
//!
//! The CPU reference is the cell part of `Sweep::run` (`planners/dynamic_roadmap/sweep.rs`): for
//! every edge, every body at every checked configuration becomes an oriented box (the body's local
//! box moved by its frame and grown by the inflation plus the body's sweep), and `Grid::cells_of`
//! lists the cells the box may touch; the edge's cells are their sorted, distinct union. The
//! kernels compute the same union with the same arithmetic: the checked configurations and frames
//! of the collision kernels (`gmp_interpolate`, `gmp_fk`, the batched forward kinematics of
//! `fk_frames`), `gmp_body_sweep`, and twins of `Grid::range`, `Grid::border`, `Grid::cell_box`
//! and `obb_disjoint` built without fused multiply-add. A set is independent of the order its
//! elements are found in, so the map is identical to the CPU's, not merely close
//! (`tests/gpu_parity.rs` holds it to that on the GPU; the unit test below runs the kernels
//! compiled as host C++ against the CPU sweep).
//!
//! The edges go in chunks whose bitmaps (one row of `ceil(cells / 32)` words per edge) fit
//! 256 MiB (`BITMAP_BUDGET_WORDS`): per chunk, one clear of the bitmap, one thread per (checked
//! configuration, body) setting bits, one thread per edge counting them, a prefix sum on the
//! host, one thread per edge writing its cells in ascending order, and the cells copied back.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaStream, DeviceRepr, PushKernelArg};

use super::rgg::drm_module;
use super::{
    backend_err, device_count, dptr, drv, ensure_dev, launch_cfg, model_args, upload, DeviceRobot,
    DeviceScene, MAX_DOF, MAX_FRAMES,
};
use crate::collision::model::{CollisionModel, SceneModel};
use crate::collision::{CollisionError, PreparedMotions};
use crate::planners::dynamic_roadmap::sweep::{BodyLocal, Grid};
use crate::scene::Scene;

/// Bitmap words one chunk may use on the device (256 MiB).
pub(crate) const BITMAP_BUDGET_WORDS: usize = 1 << 26;
/// Most (checked configuration, body) items, one thread each, per chunk.
pub(crate) const MAX_ITEMS: u64 = 1 << 30;

/// What the voxel map of a roadmap's edges is computed from: exactly what `Sweep::run` reads
/// for its cells.
pub(crate) struct VoxelJob<'a> {
    /// The robot (frames, bodies, base state, body reach).
    pub model: &'a CollisionModel,
    /// Per body: its local box centre, then its half extents (`BodyLocal::box_c`, `box_h`).
    pub boxes: Vec<[f32; 6]>,
    /// The edges as the checker interpolates them.
    pub motions: &'a PreparedMotions,
    /// The voxel grid.
    pub grid: Grid,
    /// Added to every box besides the body's sweep (`SweepParams::inflate`).
    pub inflate: f32,
}

impl<'a> VoxelJob<'a> {
    /// The job of `bodies` (the sweep's bodies of `model`, in model order).
    pub fn new(
        model: &'a CollisionModel,
        bodies: &[BodyLocal],
        motions: &'a PreparedMotions,
        grid: Grid,
        inflate: f32,
    ) -> Self {
        let boxes = bodies
            .iter()
            .map(|b| {
                [
                    b.box_c[0], b.box_c[1], b.box_c[2], b.box_h[0], b.box_h[1], b.box_h[2],
                ]
            })
            .collect();
        Self {
            model,
            boxes,
            motions,
            grid,
            inflate,
        }
    }

    /// Number of edges.
    fn edges(&self) -> usize {
        self.motions.segments.len()
    }

    /// Bitmap words per edge.
    fn words(&self) -> usize {
        self.grid.len().div_ceil(32)
    }
}

/// One chunk of edges as the kernels get it.
pub(crate) struct ChunkInput<'a> {
    /// The chunk's edges.
    pub edges: Range<usize>,
    /// Their `PreparedMotions::start` rows.
    pub start: &'a [f32],
    /// Their `PreparedMotions::diff` rows.
    pub diff: &'a [f32],
    /// Their segment counts.
    pub segments: &'a [u32],
    /// First checked configuration of each edge within the chunk (`edges.len() + 1` entries,
    /// strictly increasing: an edge has `segments + 1` checked configurations).
    pub cfg_off: Vec<u32>,
    /// (checked configuration, body) items: `cfg_off.last() * bodies`.
    pub items: u32,
}

/// Splits the edges into consecutive chunks whose bitmaps (`words` per edge) fit `budget_words`
/// and whose (checked configuration, body) items fit `max_items`; each chunk holds at least one
/// edge. Fails when one edge alone has more items than `max_items`.
pub(crate) fn plan_chunks(
    segments: &[u32],
    bodies: usize,
    words: usize,
    budget_words: usize,
    max_items: u64,
) -> Result<Vec<Range<usize>>, String> {
    let per_chunk = (budget_words / words.max(1)).max(1);
    let mut out = Vec::new();
    let mut first = 0;
    let mut items = 0u64;
    for (e, &n) in segments.iter().enumerate() {
        let it = (u64::from(n) + 1) * bodies as u64;
        if it > max_items {
            return Err(format!(
                "edge {e} has {n} segments: {it} (configuration, body) items are too many for the \
                 CUDA voxel builder (at most {max_items})"
            ));
        }
        if e > first && (e - first >= per_chunk || items + it > max_items) {
            out.push(first..e);
            first = e;
            items = 0;
        }
        items += it;
    }
    if first < segments.len() {
        out.push(first..segments.len());
    }
    Ok(out)
}

/// Exclusive prefix sums of `segments + 1` (the first checked configuration of each edge), with
/// the total as the last entry.
pub(crate) fn config_offsets(segments: &[u32]) -> Vec<u32> {
    let mut off = Vec::with_capacity(segments.len() + 1);
    let mut acc = 0u32;
    off.push(0);
    for &n in segments {
        acc = acc.saturating_add(n.saturating_add(1));
        off.push(acc);
    }
    off
}

/// Runs `run` on every chunk of `job` (bitmaps of at most `budget_words`) and concatenates the
/// per-edge cell counts and cells, in edge order: the `(cell_counts, cells)` of `Sweep::run`.
pub(crate) fn voxel_cells_with(
    job: &VoxelJob<'_>,
    budget_words: usize,
    mut run: impl FnMut(&ChunkInput<'_>) -> Result<(Vec<u32>, Vec<u32>), CollisionError>,
) -> Result<(Vec<u32>, Vec<u32>), CollisionError> {
    let n = job.edges();
    let dof = job.model.dof();
    let p = job.motions;
    if p.start.len() != n * dof || p.diff.len() != n * dof {
        return Err(CollisionError::WrongDof {
            expected: n * dof,
            got: p.start.len().min(p.diff.len()),
        });
    }
    if job.boxes.len() != job.model.bodies.len() {
        return Err(backend_err(format!(
            "voxel map: {} body boxes for {} bodies",
            job.boxes.len(),
            job.model.bodies.len()
        )));
    }
    let bodies = job.boxes.len();
    let mut counts = Vec::with_capacity(n);
    let mut cells = Vec::new();
    if bodies == 0 || job.grid.is_empty() {
        counts.resize(n, 0);
        return Ok((counts, cells));
    }
    let chunks = plan_chunks(&p.segments, bodies, job.words(), budget_words, MAX_ITEMS)
        .map_err(backend_err)?;
    for r in chunks {
        let segments = &p.segments[r.clone()];
        let cfg_off = config_offsets(segments);
        let configs = u64::from(cfg_off.last().copied().unwrap_or(0));
        let items = u32::try_from(configs * bodies as u64)
            .map_err(|_| backend_err("voxel map: too many items in one chunk"))?;
        let input = ChunkInput {
            edges: r.clone(),
            start: &p.start[r.start * dof..r.end * dof],
            diff: &p.diff[r.start * dof..r.end * dof],
            segments,
            cfg_off,
            items,
        };
        let (c, mut x) = run(&input)?;
        let total: u64 = c.iter().map(|&v| u64::from(v)).sum();
        if c.len() != r.len() || total != x.len() as u64 {
            return Err(backend_err(format!(
                "voxel map: chunk {r:?} returned {} counts summing to {total} for {} cells",
                c.len(),
                x.len()
            )));
        }
        counts.extend_from_slice(&c);
        cells.append(&mut x);
    }
    Ok((counts, cells))
}

/// The chunk parameters the kernels read (`GmpVoxelJob` in `kernels/drm.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct VoxelArgs {
    start: u64,
    diff: u64,
    segments: u64,
    cfg_off: u64,
    boxes: u64,
    bitmap: u64,
    edges: u32,
    items: u32,
    inflate: f32,
    pad: u32,
    origin: [f32; 3],
    cell: f32,
    dims: [u32; 3],
    words: u32,
}

// SAFETY: plain #[repr(C)] data of u64/u32/f32 fields, laid out exactly as `GmpVoxelJob`.
unsafe impl DeviceRepr for VoxelArgs {}

/// Time the CUDA voxel builder took (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct VoxelTimings {
    /// Chunks of edges.
    pub chunks: usize,
    /// The bitmap clears and the three kernels, summed over the chunks (CUDA events; the copies
    /// and the host's prefix sums between the kernels not included).
    pub kernel_ms: f64,
    /// The whole build on the host: uploads, kernels, copies back, assembly.
    pub wall_ms: f64,
}

/// `u32` words of f32 values.
fn words_of(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The voxel cells of every edge of `job` computed on device `ordinal`: `(cell_counts, cells)`
/// exactly as `Sweep::run` gives them (per edge its sorted, distinct cells, edges in order).
pub(crate) fn voxel_cells(
    job: &VoxelJob<'_>,
    ordinal: usize,
) -> Result<(Vec<u32>, Vec<u32>, VoxelTimings), CollisionError> {
    let t0 = Instant::now();
    if device_count() <= ordinal {
        return Err(backend_err(format!(
            "no CUDA device {ordinal} (libcuda missing or no GPU visible)"
        )));
    }
    let model = job.model;
    if model.frames.len() > MAX_FRAMES || model.dof() > MAX_DOF {
        return Err(backend_err(format!(
            "the robot has {} moving frames and {} group joints; the CUDA kernels support at most \
             {MAX_FRAMES} and {MAX_DOF}",
            model.frames.len(),
            model.dof()
        )));
    }
    let dm = drm_module(ordinal)?;
    let ctx = dm.ctx.clone();
    let stream: Arc<CudaStream> = ctx.new_stream().map_err(drv("creating a stream"))?;
    let func = |name: &str| {
        dm.module
            .load_function(name)
            .map_err(|e| backend_err(format!("kernel '{name}' not found: {e:?}")))
    };
    let (f_mark, f_count, f_list) = (
        func("drm_voxel_mark")?,
        func("drm_voxel_count")?,
        func("drm_voxel_list")?,
    );
    let scene_model = SceneModel::build(&Scene::default());
    let robot = DeviceRobot::upload(&stream, model)?;
    let scene = DeviceScene::upload(&stream, &scene_model, false)?;
    let margs = model_args(&stream, &robot, &scene, model, &scene_model);
    let boxes: Vec<f32> = job.boxes.iter().flatten().copied().collect();
    let boxes = upload(&stream, &words_of(&boxes))?;
    let words = job.words();
    let mut bitmap = upload(&stream, &[])?;
    let mut start = upload(&stream, &[])?;
    let mut diff = upload(&stream, &[])?;
    let mut segments = upload(&stream, &[])?;
    let mut cfg_off = upload(&stream, &[])?;
    let mut counts_dev = upload(&stream, &[])?;
    let mut offsets_dev = upload(&stream, &[])?;
    let mut cells_dev = upload(&stream, &[])?;
    let ev = || {
        ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv("creating an event"))
    };
    let events = [ev()?, ev()?, ev()?, ev()?];
    let g = job.grid;
    let mut timings = VoxelTimings::default();
    let (counts, cells) = voxel_cells_with(job, BITMAP_BUDGET_WORDS, |c| {
        let ne = c.edges.len();
        let nw = ne * words;
        ensure_dev(&stream, &mut bitmap, nw)?;
        ensure_dev(&stream, &mut counts_dev, ne)?;
        ensure_dev(&stream, &mut offsets_dev, ne)?;
        // The chunk's edges (a few words each).
        for (buf, words) in [
            (&mut start, words_of(c.start)),
            (&mut diff, words_of(c.diff)),
            (&mut segments, c.segments.to_vec()),
            (&mut cfg_off, c.cfg_off.clone()),
        ] {
            ensure_dev(&stream, buf, words.len())?;
            let mut dst = buf.slice_mut(0..words.len());
            stream
                .memcpy_htod(&words[..], &mut dst)
                .map_err(drv("voxel map upload"))?;
        }
        events[0].record(&stream).map_err(drv("event"))?;
        {
            let mut rows = bitmap.slice_mut(0..nw);
            stream
                .memset_zeros(&mut rows)
                .map_err(drv("clearing the voxel bitmap"))?;
        }
        let args = VoxelArgs {
            start: dptr(&start, &stream),
            diff: dptr(&diff, &stream),
            segments: dptr(&segments, &stream),
            cfg_off: dptr(&cfg_off, &stream),
            boxes: dptr(&boxes, &stream),
            bitmap: dptr(&bitmap, &stream),
            edges: ne as u32,
            items: c.items,
            inflate: job.inflate,
            pad: 0,
            origin: g.origin,
            cell: g.cell,
            dims: g.dims,
            words: words as u32,
        };
        {
            let mut b = stream.launch_builder(&f_mark);
            b.arg(&margs).arg(&args);
            unsafe { b.launch(launch_cfg(c.items as usize)) }
                .map_err(drv("launching drm_voxel_mark"))?;
        }
        let (ne32, w32) = (ne as u32, words as u32);
        {
            let mut b = stream.launch_builder(&f_count);
            b.arg(&bitmap).arg(&w32).arg(&ne32).arg(&mut counts_dev);
            unsafe { b.launch(launch_cfg(ne)) }.map_err(drv("launching drm_voxel_count"))?;
        }
        events[1].record(&stream).map_err(drv("event"))?;
        let mut counts = vec![0u32; ne];
        stream
            .memcpy_dtoh(&counts_dev.slice(0..ne), &mut counts[..])
            .map_err(drv("copy to host"))?;
        stream
            .synchronize()
            .map_err(drv("drm_voxel_mark execution"))?;
        let mut offsets = Vec::with_capacity(ne);
        let mut total = 0u64;
        for &k in &counts {
            offsets.push(
                u32::try_from(total)
                    .map_err(|_| backend_err("voxel map: more than 2^32 cells in one chunk"))?,
            );
            total += u64::from(k);
        }
        let total = usize::try_from(total)
            .map_err(|_| backend_err("voxel map: too many cells for this host"))?;
        ensure_dev(&stream, &mut cells_dev, total)?;
        {
            let mut dst = offsets_dev.slice_mut(0..ne);
            stream
                .memcpy_htod(&offsets[..], &mut dst)
                .map_err(drv("voxel map upload"))?;
        }
        events[2].record(&stream).map_err(drv("event"))?;
        {
            let mut b = stream.launch_builder(&f_list);
            b.arg(&bitmap)
                .arg(&w32)
                .arg(&ne32)
                .arg(&offsets_dev)
                .arg(&mut cells_dev);
            unsafe { b.launch(launch_cfg(ne)) }.map_err(drv("launching drm_voxel_list"))?;
        }
        events[3].record(&stream).map_err(drv("event"))?;
        let mut cells = vec![0u32; total];
        if total > 0 {
            stream
                .memcpy_dtoh(&cells_dev.slice(0..total), &mut cells[..])
                .map_err(drv("copy to host"))?;
        }
        stream
            .synchronize()
            .map_err(drv("drm_voxel_list execution"))?;
        let el = |a: usize, b: usize| -> Result<f64, CollisionError> {
            Ok(events[a]
                .elapsed_ms(&events[b])
                .map_err(drv("event timing"))? as f64)
        };
        timings.kernel_ms += el(0, 1)? + el(2, 3)?;
        timings.chunks += 1;
        Ok((counts, cells))
    })?;
    timings.wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok((counts, cells, timings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_edge_once_within_the_limits() {
        let segments: Vec<u32> = (0..50u32).map(|i| (i * 7) % 13).collect();
        for (words, budget, max_items) in [(10, 35, 1000u64), (1, 1 << 20, 40), (100, 50, 1 << 30)]
        {
            let chunks = plan_chunks(&segments, 3, words, budget, max_items).unwrap();
            let mut next = 0;
            for r in &chunks {
                assert_eq!(r.start, next, "consecutive");
                assert!(!r.is_empty());
                let items: u64 = segments[r.clone()]
                    .iter()
                    .map(|&n| (u64::from(n) + 1) * 3)
                    .sum();
                assert!(r.len() == 1 || r.len() * words <= budget, "{r:?} bitmap");
                assert!(items <= max_items, "{r:?} items {items}");
                next = r.end;
            }
            assert_eq!(next, segments.len());
        }
        // Enough room: one chunk.
        assert_eq!(
            plan_chunks(&segments, 3, 10, 1 << 20, 1 << 30).unwrap(),
            vec![0..50]
        );
        // One edge alone over the item limit is an error that names it.
        let err = plan_chunks(&[3, 1000, 2], 2, 1, 100, 100).unwrap_err();
        assert!(err.contains("edge 1"), "{err}");
        assert!(plan_chunks(&[], 2, 1, 100, 100).unwrap().is_empty());
    }

    #[test]
    fn config_offsets_count_segments_plus_one() {
        assert_eq!(config_offsets(&[3, 0, 5]), vec![0, 4, 5, 11]);
        assert_eq!(config_offsets(&[]), vec![0]);
    }

    #[test]
    fn args_match_the_kernel_struct() {
        // GmpVoxelJob: 6 pointers, 4 words, then GmpGrid (8 words).
        assert_eq!(std::mem::size_of::<VoxelArgs>(), 6 * 8 + 4 * 4 + 8 * 4);
    }

    /// The kernels compiled as host C++ (`common.cuh` and `drm.cu` with the CUDA keywords
    /// stubbed and each launch run thread by thread) against the CPU sweep.
    mod host_twin {
        use super::super::*;
        use crate::collision::{prepare_motions, CheckerOptions, CpuChecker};
        use crate::gpu::kernels::{host_twin, COMMON_CUH, DRM_CU};
        use crate::planners::dynamic_roadmap::sample_roadmap;
        use crate::planners::dynamic_roadmap::sweep::{Sweep, SweepParams};
        use crate::robot::{LoadOptions, PlanningGroup, RobotModel};
        use std::path::{Path, PathBuf};
        use std::process::Command;

        const PRELUDE: &str = r#"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
using std::isnan;
using std::max;
using std::min;
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__
struct GmpDim3 { unsigned x, y, z; };
static GmpDim3 blockIdx, threadIdx, blockDim;
static unsigned atomicOr(unsigned* a, unsigned v) { unsigned o = *a; *a = o | v; return o; }
static int __popc(unsigned x) { return __builtin_popcount(x); }
static int __ffs(int x) { return __builtin_ffs(x); }
"#;

        const MAIN: &str = r#"
static std::vector<uint32_t> load(const std::string& dir, const char* name) {
    std::vector<uint32_t> v;
    FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
    if (!f) { std::fprintf(stderr, "missing %s/%s\n", dir.c_str(), name); std::exit(2); }
    uint32_t w;
    while (std::fread(&w, 4, 1, f) == 1) v.push_back(w);
    std::fclose(f);
    v.push_back(0);  // never empty
    return v;
}

static void save(const std::string& dir, const char* name, const std::vector<uint32_t>& v) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!f) std::exit(3);
    if (!v.empty()) std::fwrite(v.data(), 4, v.size(), f);
    std::fclose(f);
}

template <class F> static void launch(unsigned n, F f) {
    blockDim.x = 128; blockDim.y = 1; blockDim.z = 1;
    for (unsigned b = 0; b * 128u < n; b++) {
        blockIdx.x = b;
        for (unsigned t = 0; t < 128u; t++) { threadIdx.x = t; f(); }
    }
}

static float fl(uint32_t w) { float f; std::memcpy(&f, &w, 4); return f; }

int main(int argc, char** argv) {
    if (argc < 2) return 4;
    const std::string dir = argv[1];
    auto meta = load(dir, "meta"), frames = load(dir, "frames"), bodies = load(dir, "bodies");
    auto base = load(dir, "base_state"), vg = load(dir, "var_group"), reach = load(dir, "reach");
    auto start = load(dir, "start"), diff = load(dir, "diff"), seg = load(dir, "segments");
    auto off = load(dir, "cfg_off"), boxes = load(dir, "boxes");
    GmpModel m;
    std::memset(&m, 0, sizeof m);
    m.frames = reinterpret_cast<const GmpFrame*>(frames.data());
    m.bodies = reinterpret_cast<const GmpBody*>(bodies.data());
    m.base_state = reinterpret_cast<const float*>(base.data());
    m.var_group = reinterpret_cast<const int*>(vg.data());
    m.reach = reinterpret_cast<const float*>(reach.data());
    m.num_frames = meta[0];
    m.num_bodies = meta[1];
    m.dof = meta[2];
    GmpVoxelJob job;
    job.start = reinterpret_cast<const float*>(start.data());
    job.diff = reinterpret_cast<const float*>(diff.data());
    job.segments = seg.data();
    job.cfg_off = off.data();
    job.boxes = reinterpret_cast<const float*>(boxes.data());
    job.edges = meta[3];
    job.items = meta[4];
    job.inflate = fl(meta[5]);
    job.pad = 0;
    for (int k = 0; k < 3; k++) {
        job.grid.origin[k] = fl(meta[6 + k]);
        job.grid.dims[k] = meta[10 + k];
    }
    job.grid.cell = fl(meta[9]);
    job.grid.words = meta[13];
    const unsigned edges = job.edges, words = job.grid.words;
    std::vector<uint32_t> bitmap((size_t)edges * words + 1, 0u);
    job.bitmap = bitmap.data();
    launch(job.items, [&] { drm_voxel_mark(m, job); });
    std::vector<uint32_t> counts(edges + 1, 0u);
    launch(edges, [&] { drm_voxel_count(bitmap.data(), words, edges, counts.data()); });
    counts.resize(edges);
    std::vector<uint32_t> offsets(edges + 1, 0u);
    uint64_t total = 0;
    for (unsigned e = 0; e < edges; e++) { offsets[e] = (uint32_t)total; total += counts[e]; }
    std::vector<uint32_t> cells(total + 1, 0u);
    launch(edges, [&] { drm_voxel_list(bitmap.data(), words, edges, offsets.data(), cells.data()); });
    cells.resize(total);
    save(dir, "out_counts", counts);
    save(dir, "out_cells", cells);
    return 0;
}
"#;

        fn build_twin(cxx: &str, dir: &Path) -> PathBuf {
            let text = format!("{PRELUDE}{COMMON_CUH}\n{DRM_CU}\n{MAIN}");
            host_twin::compile(cxx, dir, "voxel_twin", &text).unwrap_or_else(|e| panic!("{e}"))
        }

        fn write(dir: &Path, name: &str, words: &[u32]) {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(dir.join(name), bytes).unwrap();
        }

        fn read(dir: &Path, name: &str) -> Vec<u32> {
            std::fs::read(dir.join(name))
                .unwrap()
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        }

        /// The voxel cells of `job` by the host twin of the kernels, chunk by chunk.
        fn twin_cells(
            exe: &Path,
            dir: &Path,
            job: &VoxelJob<'_>,
            budget: usize,
        ) -> (Vec<u32>, Vec<u32>, usize) {
            let rw = crate::gpu::upload::RobotWords::build(job.model);
            let boxes: Vec<f32> = job.boxes.iter().flatten().copied().collect();
            let mut chunks = 0;
            let out = voxel_cells_with(job, budget, |c| {
                chunks += 1;
                let g = job.grid;
                let meta = [
                    job.model.frames.len() as u32,
                    job.model.bodies.len() as u32,
                    job.model.dof() as u32,
                    c.edges.len() as u32,
                    c.items,
                    job.inflate.to_bits(),
                    g.origin[0].to_bits(),
                    g.origin[1].to_bits(),
                    g.origin[2].to_bits(),
                    g.cell.to_bits(),
                    g.dims[0],
                    g.dims[1],
                    g.dims[2],
                    job.words() as u32,
                ];
                write(dir, "meta", &meta);
                write(dir, "frames", &rw.frames);
                write(dir, "bodies", &rw.bodies);
                write(dir, "base_state", &rw.base_state);
                write(dir, "var_group", &rw.var_group);
                write(dir, "reach", &rw.reach);
                write(dir, "start", &words_of(c.start));
                write(dir, "diff", &words_of(c.diff));
                write(dir, "segments", c.segments);
                write(dir, "cfg_off", &c.cfg_off);
                write(dir, "boxes", &words_of(&boxes));
                let st = Command::new(exe).arg(dir).status().unwrap();
                assert!(st.success(), "host twin failed: {st}");
                Ok((read(dir, "out_counts"), read(dir, "out_cells")))
            })
            .unwrap();
            (out.0, out.1, chunks)
        }

        fn compare(
            exe: &Path,
            dir: &Path,
            robot: &RobotModel,
            group: &PlanningGroup,
            base: &[f64],
            vertices: usize,
            cell: f32,
        ) {
            let model = CollisionModel::build(
                robot,
                group,
                base,
                crate::collision::RobotShapes::Polytopes,
                crate::collision::DEFAULT_MARGIN,
            )
            .unwrap();
            let empty = CpuChecker::new(
                robot,
                group,
                base,
                &Scene::default(),
                CheckerOptions::default(),
            )
            .unwrap();
            let (roadmap, _) = sample_roadmap(&empty, vertices, 4, 11).unwrap();
            let mut motions = crate::collision::MotionBatch::new(group.space.dof());
            for e in roadmap.edges() {
                motions
                    .push(roadmap.vertex(e.a).unwrap(), roadmap.vertex(e.b).unwrap())
                    .unwrap();
            }
            let prepared = prepare_motions(&group.space, &motions, 0.05).unwrap();
            let tol = 1e-4f32;
            let locals = BodyLocal::of_model(&model, 2, tol);
            let inflate = model.margin + tol;
            // A grid around the robot, smaller than its reach so that border cells matter.
            let grid = Grid {
                origin: [-0.7, -0.6, -0.2],
                cell,
                dims: [
                    (1.3 / cell).ceil() as u32,
                    (1.2 / cell).ceil() as u32,
                    (1.3 / cell).ceil() as u32,
                ],
            };
            let sweep = Sweep {
                model: &model,
                bodies: &locals,
                motions: &prepared,
                params: SweepParams {
                    inflate,
                    min_radius_ratio: 0.5,
                    max_span: 32,
                    rgg: false,
                    boxes_per_body: 1,
                },
                grid: Some(grid),
            };
            let cpu = sweep.run(0..prepared.segments.len());
            let job = VoxelJob::new(&model, &locals, &prepared, grid, inflate);
            // A budget of a few edges' bitmaps: several chunks.
            let budget = job.words() * 7;
            let (counts, cells, chunks) = twin_cells(exe, dir, &job, budget);
            assert!(chunks > 1, "the test should cover several chunks");
            assert!(!cpu.cells.is_empty());
            assert_eq!(counts, cpu.cell_counts, "cells per edge");
            assert_eq!(cells, cpu.cells, "cells");
            eprintln!(
                "voxel host twin: {} edges, {} cells, {} chunks: identical to the CPU sweep",
                counts.len(),
                cells.len(),
                chunks
            );
        }

        #[test]
        fn voxel_kernels_as_host_code_equal_the_cpu_sweep() {
            let Some(cxx) = host_twin::compiler() else {
                eprintln!("SKIP voxel_kernels_as_host_code_equal_the_cpu_sweep: no C++ compiler (c++ or GMP_CXX)");
                return;
            };
            let tmp = tempfile::tempdir().unwrap();
            let exe = build_twin(&cxx, tmp.path());
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let arm = RobotModel::from_urdf_file(
                &root.join("urdf/gmp_arm.urdf"),
                None,
                &LoadOptions::default(),
            )
            .unwrap();
            let group = arm.default_group();
            let base = arm.tree.neutral_state();
            compare(&exe, tmp.path(), &arm, &group, &base, 40, 0.07);
            // The MotionBenchMaker Panda (meshes), when its data is present.
            match crate::mbm::data_dir().and_then(|d| crate::mbm::load_robot(&d, "panda")) {
                Ok(p) => {
                    let base = p.model.tree.neutral_state();
                    compare(&exe, tmp.path(), &p.model, &p.group, &base, 25, 0.05);
                }
                Err(e) => eprintln!("voxel host twin: Panda skipped ({e})"),
            }
        }
    }
}
