//! The CUDA collision backend: a [`Checker`] whose verdicts equal the CPU reference's.
//!
//! One CUDA context and one NVRTC-compiled module per visible device and process (cached, so
//! that many checkers share them); per checker and device a stream, the robot and scene arrays
//! resident in device memory, and pinned staging buffers reused across queries. A query is one
//! copy to the device, one kernel launch and one copy back per device (batches larger than a
//! chunk are split into a few such rounds). Batches are split evenly over all devices.
//!
//! The kernels (`kernels/*.cu`) are twins of the CPU code: same f32 operations in the same
//! order, compiled without fused multiply-add, so the verdicts are identical (see
//! `tests/gpu_parity.rs`).

pub mod hub;
pub mod kernels;
pub mod rgg;
mod rrtc;
pub mod specialise;
pub mod stage;
pub mod upload;
pub mod voxel;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg,
};

use crate::collision::coherent::CellKey;
use crate::collision::combine::{split_answers, CombineStats, Combiner};
use crate::collision::detmath::Xf;
use crate::collision::model::{CollisionModel, ObstacleModel, SceneModel};
use crate::collision::prox::ProxGrid;
use crate::collision::{
    bisection_order, prepare_motions_parallel, refine_motions_up_to, validate_batch, Backend,
    Checker, CheckerOptions, CollisionError, ConfigBatch, ContactNames, MotionBatch, MotionStatus,
    PreparedMotions,
};
use crate::robot::{JointSpace, PlanningGroup, RobotModel};
use crate::scene::Scene;
use upload::{obstacle_words, ModelArgs, RobotWords, SceneWords, OBSTACLE_WORDS};

/// Most moving frames a model may have (`GMP_MAX_FRAMES` in the kernels).
pub const MAX_FRAMES: usize = 32;
/// Most planning-group joints (`GMP_MAX_DOF` in the kernels).
pub const MAX_DOF: usize = 32;
/// Threads per block.
const BLOCK: u32 = 128;
/// Configurations per launch (larger batches take a few rounds).
const CONFIG_CHUNK: usize = 1 << 22;
/// Motions per launch.
const MOTION_CHUNK: usize = 1 << 20;
/// Interpolated configurations per balanced launch.
const ITEM_CHUNK: u64 = 1 << 28;
/// Configurations per forward-kinematics launch (12 floats come back per frame).
const FK_CHUNK: usize = 1 << 18;
/// Largest total size of the bisection-order table (entries).
const MAX_ORDER_TABLE: usize = 1 << 24;

fn backend_err(message: impl Into<String>) -> CollisionError {
    CollisionError::Backend {
        backend: "cuda".into(),
        message: message.into(),
    }
}

fn drv(what: &str) -> impl Fn(DriverError) -> CollisionError + '_ {
    move |e| backend_err(format!("{what}: {e:?}"))
}

/// True when the CUDA driver library is present and reports at least one device. Never panics.
pub fn gpu_available() -> bool {
    device_count() > 0
}

/// Number of visible CUDA devices (0 without a driver or GPU). Never panics.
pub fn device_count() -> usize {
    let present = std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() })
        .unwrap_or(false);
    if !present {
        return 0;
    }
    std::panic::catch_unwind(CudaContext::device_count)
        .ok()
        .and_then(|r| r.ok())
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// A device's context and compiled collision module, shared by every checker of the process.
struct DeviceModule {
    ctx: Arc<CudaContext>,
    module: Arc<CudaModule>,
    name: String,
    /// NVRTC architecture of the device.
    arch: &'static str,
}

type ModuleCache = Mutex<HashMap<usize, Result<Arc<DeviceModule>, String>>>;

fn module_cache() -> &'static ModuleCache {
    static CACHE: OnceLock<ModuleCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Creates (once per process) the context of device `ordinal` and compiles the kernels for it.
fn device_module(ordinal: usize) -> Result<Arc<DeviceModule>, CollisionError> {
    let mut cache = lock(module_cache());
    let entry = cache.entry(ordinal).or_insert_with(|| {
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| format!("cannot create a CUDA context on device {ordinal}: {e:?}"))?;
        // One stream per checker and device; nothing is shared between streams, so cudarc's
        // per-buffer event tracking is pure overhead.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().unwrap_or_else(|_| format!("cuda:{ordinal}"));
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| format!("device {ordinal}: compute capability: {e:?}"))?;
        let arch = kernels::arch_for(major, minor);
        let (ptx, _) =
            kernels::compile_cached(&with_rrtc_bounds(kernels::collision_source()), arch, None)?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| format!("device {ordinal}: loading the collision module: {e:?}"))?;
        Ok(Arc::new(DeviceModule {
            ctx,
            module,
            name,
            arch,
        }))
    });
    entry.clone().map_err(backend_err)
}

/// Robot-specialised modules by device, register cap and source (compiled once per process).
type SpecCache = Mutex<HashMap<(usize, Option<usize>, String), Result<Arc<CudaModule>, String>>>;

/// Compiles (once per process, device, register cap and source) and loads a specialised module.
fn specialised_module(
    dm: &DeviceModule,
    ordinal: usize,
    source: &str,
    maxrreg: Option<usize>,
) -> Result<Arc<CudaModule>, String> {
    static CACHE: OnceLock<SpecCache> = OnceLock::new();
    let mut cache = lock(CACHE.get_or_init(|| Mutex::new(HashMap::new())));
    cache
        .entry((ordinal, maxrreg, source.to_string()))
        .or_insert_with(|| {
            // A register cap replaces the launch bounds a specialised unit may set (see
            // specialise::REGISTER_CAP_MACRO).
            let capped;
            let source = match maxrreg {
                Some(r) => {
                    capped = format!("#define {} {r}\n{source}", specialise::REGISTER_CAP_MACRO);
                    capped.as_str()
                }
                None => source,
            };
            let (ptx, _) = kernels::compile_cached(source, dm.arch, maxrreg)?;
            dm.ctx.load_module(ptx).map_err(|e| {
                format!("device {ordinal}: loading the specialised collision module: {e:?}")
            })
        })
        .clone()
}

/// Fails when `model` has more moving frames or joints than the kernels hold.
fn within_kernel_limits(model: &CollisionModel) -> Result<(), CollisionError> {
    if model.frames.len() > MAX_FRAMES {
        return Err(backend_err(format!(
            "the robot has {} moving frames; the CUDA kernels support at most {MAX_FRAMES}",
            model.frames.len()
        )));
    }
    if model.dof() > MAX_DOF {
        return Err(backend_err(format!(
            "the planning group has {} joints; the CUDA kernels support at most {MAX_DOF}",
            model.dof()
        )));
    }
    Ok(())
}

/// The robot-specialised translation unit `cuda` asks for, or why there is none.
fn specialised_source(
    model: &CollisionModel,
    cuda: &CudaOptions,
) -> Result<specialise::SpecialisedSource, String> {
    match cuda.spec_maxrreg {
        _ if !cuda.specialise => Err("turned off (GMP_CUDA_KERNEL=generic or CudaOptions)".into()),
        Some(r) if !(16..=255).contains(&r) => Err(format!(
            "register cap {r} out of range 16..=255 ({MAXRREG_ENV})"
        )),
        _ => {
            let layout = cuda
                .spec_layout
                .unwrap_or_else(|| specialise::Layout::for_model(model));
            let mut g = specialise::generate_with(model, layout).map_err(|e| e.to_string())?;
            g.source = with_rrtc_bounds(std::mem::take(&mut g.source));
            if std::env::var(SPEC_TRI_ENV).is_ok_and(|v| v.trim() == "0") {
                g.source = format!("#define GMP_SPEC_TRI 0\n{}", g.source);
            }
            Ok(g)
        }
    }
}

/// Environment variable: `0` makes the specialised motion-step test of the sphere models' looped
/// layouts run as two passes (with the sweep, then, where that fails, without it) instead of
/// the one three-way pass (`TRI` in [`specialise`]); the verdicts are the same. For measuring
/// the two side by side.
pub const SPEC_TRI_ENV: &str = "GMP_SPEC_TRI";

/// Environment variable: the blocks of the many-problem device planner kernel
/// (`rrtc_plan_multi` in `kernels/rrtc.cu`) it is compiled to keep resident per multiprocessor,
/// which caps its registers per thread (`GMP_RRTC_MIN_BLOCKS`, 0 to 8: 0 for no launch bounds;
/// unset, the kernel's default, 3).
pub const RRTC_BLOCKS_ENV: &str = "GMP_RRTC_BLOCKS";

/// `source` with [`RRTC_BLOCKS_ENV`]'s choice defined in front, when set to a number 0 to 8.
fn with_rrtc_bounds(source: String) -> String {
    let number = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    let source = match number(RRTC_SINGLE_THREADS_ENV) {
        Some(t) if (32..=1024).contains(&t) && t % 32 == 0 => {
            format!("#define GMP_RRTC_SINGLE_THREADS {t}\n{source}")
        }
        _ => source,
    };
    match number(RRTC_BLOCKS_ENV) {
        Some(b) if b <= 8 => format!("#define GMP_RRTC_MIN_BLOCKS {b}\n{source}"),
        _ => source,
    }
}

/// Environment variable: launch bounds for the one-scene device planner kernel (`rrtc_plan`):
/// blocks of up to this many threads (a multiple of 32, at most 1024), one per multiprocessor,
/// which caps its registers so that more than 8 warps fit ([`crate::planners::device::DEVICE_WARPS_ENV`]).
/// Unset: no bounds (255 registers, at most 8 warps).
pub const RRTC_SINGLE_THREADS_ENV: &str = "GMP_RRTC_SINGLE_THREADS";

/// Which collision kernels a [`CudaChecker`] runs. Both give the CPU's verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum KernelVariant {
    /// The table-driven kernels of `kernels/collision.cu`: loops over the robot tables in device
    /// memory; any robot.
    Generic,
    /// Kernels generated for the loaded robot by [`specialise`]: the same arithmetic with the
    /// robot's constants folded into straight-line code.
    Specialised,
}

impl KernelVariant {
    /// The variant's name.
    pub fn name(self) -> &'static str {
        match self {
            KernelVariant::Generic => "generic",
            KernelVariant::Specialised => "specialised",
        }
    }
}

/// Environment variable choosing the collision kernels: `generic` turns the robot-specialised
/// kernels off; anything else (or unset) uses them whenever they can be generated and compiled.
pub const KERNEL_ENV: &str = "GMP_CUDA_KERNEL";
/// Environment variable capping the registers per thread of the specialised kernels (NVRTC
/// `--maxrregcount`; unset: the compiler's choice).
pub const MAXRREG_ENV: &str = "GMP_SPEC_MAXRREG";
/// Environment variable choosing the layout of the specialised kernels (a
/// [`specialise::Layout::name`], such as `grouped` or `looped-compact`; anything else: the
/// layout the model suits). `gmp bench collision` picks its builds with `--spec-builds`
/// instead.
pub const LAYOUT_ENV: &str = "GMP_SPEC_LAYOUT";

/// How a [`CudaChecker`] chooses its collision kernels (beyond [`CheckerOptions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// Generate, compile and use kernels specialised to the robot when possible (the generic
    /// kernels run otherwise).
    pub specialise: bool,
    /// Register cap per thread of the specialised kernels (NVRTC `--maxrregcount`, 16..=255);
    /// `None`: the compiler's choice.
    pub spec_maxrreg: Option<usize>,
    /// How the specialised tests are laid out in device functions; `None`: the layout the
    /// model suits ([`specialise::Layout::for_model`]).
    pub spec_layout: Option<specialise::Layout>,
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            specialise: true,
            spec_maxrreg: None,
            spec_layout: None,
        }
    }
}

impl CudaOptions {
    /// The defaults, overridden by [`KERNEL_ENV`], [`MAXRREG_ENV`] and [`LAYOUT_ENV`].
    pub fn from_env() -> Self {
        Self {
            specialise: std::env::var(KERNEL_ENV).map_or(true, |v| v.trim() != "generic"),
            spec_maxrreg: std::env::var(MAXRREG_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok()),
            spec_layout: std::env::var(LAYOUT_ENV)
                .ok()
                .and_then(|v| specialise::Layout::parse(&v)),
        }
    }
}

/// Names of the visible devices (empty without a GPU).
pub fn device_names() -> Vec<String> {
    (0..device_count())
        .map(|i| {
            device_module(i)
                .map(|m| m.name.clone())
                .unwrap_or_else(|_| format!("cuda:{i}"))
        })
        .collect()
}

/// Which kernel validates motions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MotionKernel {
    /// One thread per motion, its steps in bisection order.
    Naive,
    /// One thread per (motion, step) item, items rank-major with a per-motion early-exit flag.
    Balanced,
    /// One thread per (motion, step) item, in tiles of 32 ranks: a warp checks neighbouring
    /// ranks of one motion instead of one rank of 32 motions (same flags as `Balanced`).
    Tiled,
}

impl MotionKernel {
    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            MotionKernel::Naive => "naive",
            MotionKernel::Balanced => "balanced",
            MotionKernel::Tiled => "tiled",
        }
    }

    /// Every motion kernel.
    pub const ALL: [MotionKernel; 3] = [
        MotionKernel::Naive,
        MotionKernel::Balanced,
        MotionKernel::Tiled,
    ];

    /// The kernel a checker starts with (the fastest measured: tiled, 1.3-2x the balanced
    /// kernel's rate on the H100, `results/collision/motion_tiles_H100_2026-11-26/`).
    pub const DEFAULT: MotionKernel = MotionKernel::Tiled;

    /// The kernel called `name` (as [`Self::name`] gives it), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Time spent by the last query (milliseconds; the maximum over devices when several ran; for
/// a motion check, the sum over its refinement rounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct GpuTimings {
    /// Host staging into the pinned buffers (configurations: rounding to f32 and the finiteness
    /// check; motions: their sorted layout and values; wall time on the host, overlapping the
    /// copies and kernels of earlier pieces).
    pub stage_ms: f64,
    /// Host to device copies (CUDA events).
    pub htod_ms: f64,
    /// Kernels (CUDA events).
    pub kernel_ms: f64,
    /// Device to host copies (CUDA events).
    pub dtoh_ms: f64,
    /// Wall time of the whole query on the host, preparation included.
    pub wall_ms: f64,
    /// Motion checks: the host's preparation of the batch before its first round (f32 starts
    /// and differences, segment counts), wall time; 0 for other queries.
    pub prepare_ms: f64,
    /// Motion checks: wall time of the first round (every motion once, before refinements);
    /// 0 for other queries.
    pub first_round_ms: f64,
    /// Kernel launches (all devices).
    pub launches: u32,
}

impl GpuTimings {
    /// Adds the times and launches of `o` (a later round of the same query) to these.
    pub fn add(&mut self, o: &GpuTimings) {
        self.stage_ms += o.stage_ms;
        self.htod_ms += o.htod_ms;
        self.kernel_ms += o.kernel_ms;
        self.dtoh_ms += o.dtoh_ms;
        self.wall_ms += o.wall_ms;
        self.prepare_ms += o.prepare_ms;
        self.first_round_ms += o.first_round_ms;
        self.launches += o.launches;
    }
}

/// Bisection orders of every segment count seen so far, concatenated (host side).
#[derive(Clone, Debug, Default)]
struct OrderTable {
    order: Vec<u32>,
    /// `off[n]` = start of `bisection_order(n)` in `order`, or `u32::MAX`.
    off: Vec<u32>,
    version: u64,
}

impl OrderTable {
    fn ensure(&mut self, segments: &[u32]) -> Result<(), CollisionError> {
        let mut changed = false;
        for &n in segments {
            let idx = n as usize;
            if idx < self.off.len() && self.off[idx] != u32::MAX {
                continue;
            }
            if self.order.len() + idx + 1 > MAX_ORDER_TABLE {
                return Err(backend_err(format!(
                    "a motion with {n} segments is too long for the CUDA backend (the step \
                     tables would exceed {MAX_ORDER_TABLE} entries); use a coarser resolution \
                     or the CPU backend"
                )));
            }
            if self.off.len() <= idx {
                self.off.resize(idx + 1, u32::MAX);
            }
            self.off[idx] = self.order.len() as u32;
            self.order.extend(bisection_order(n));
            changed = true;
        }
        if changed {
            self.version += 1;
        }
        Ok(())
    }
}

/// Configuration values on their way to a device's staging buffer: already f32, or f64 to round
/// (and to check for NaN and infinities, as `validate_batch` does) on the way.
#[derive(Clone, Copy, Debug)]
enum ConfigValues<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl<'a> ConfigValues<'a> {
    fn len(&self) -> usize {
        match self {
            ConfigValues::F32(v) => v.len(),
            ConfigValues::F64(v) => v.len(),
        }
    }

    fn slice(&self, r: std::ops::Range<usize>) -> ConfigValues<'a> {
        match *self {
            ConfigValues::F32(v) => ConfigValues::F32(&v[r]),
            ConfigValues::F64(v) => ConfigValues::F64(&v[r]),
        }
    }
}

/// Where a device's configurations sit in the batch, to name a non-finite value.
#[derive(Clone, Copy, Debug)]
struct Rows<'a> {
    dof: usize,
    /// Batch index of the device's first configuration.
    first: usize,
    /// Joint names.
    names: &'a [String],
}

/// Fewest values per staging thread (smaller batches are staged on the calling thread).
const STAGE_GRAIN: usize = 1 << 18;

/// Environment variable (measurements): values per staging thread instead of `STAGE_GRAIN`.
pub const STAGE_GRAIN_ENV: &str = "GMP_STAGE_GRAIN";

/// [`STAGE_GRAIN`], or [`STAGE_GRAIN_ENV`] (read once).
fn stage_grain() -> usize {
    static G: OnceLock<usize> = OnceLock::new();
    *G.get_or_init(|| {
        std::env::var(STAGE_GRAIN_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&g: &usize| g >= 1024)
            .unwrap_or(STAGE_GRAIN)
    })
}

fn host_threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(16)
    })
}

/// Writes `src` (as many values as `dst` holds) as f32 bits into `dst`, on several threads for
/// large batches. Returns the index of the first value that is not finite (f64 input only; the
/// values are written regardless).
fn stage_values(src: ConfigValues, dst: &mut [u32]) -> Option<usize> {
    fn part(src: ConfigValues, dst: &mut [u32]) -> Option<usize> {
        match src {
            ConfigValues::F32(v) => {
                stage::copy_f32(v, dst);
                None
            }
            ConfigValues::F64(v) => {
                // No branch per value (see the stage module); the values of a part with a bad
                // one are searched again.
                if stage::round_f64(v, dst) {
                    None
                } else {
                    v.iter().take(dst.len()).position(|x| !x.is_finite())
                }
            }
        }
    }
    let threads = (dst.len() / stage_grain()).clamp(1, host_threads());
    if threads == 1 {
        return part(src, dst);
    }
    // On the rayon pool, not on threads spawned per call: a pipelined batch stages every piece
    // (results/collision/staging_pool_H100_2026-11-22/).
    use rayon::prelude::*;
    let per = dst.len().div_ceil(threads);
    dst.par_chunks_mut(per)
        .enumerate()
        .filter_map(|(k, d)| part(src.slice(k * per..k * per + d.len()), d).map(|i| k * per + i))
        .min()
}

/// Grows a device buffer to at least `n` elements (contents are not kept).
fn ensure_dev<T: cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    buf: &mut CudaSlice<T>,
    n: usize,
) -> Result<(), CollisionError> {
    if buf.len() < n.max(1) {
        *buf = unsafe { stream.alloc::<T>(n.max(1)) }.map_err(drv("device allocation"))?;
    }
    Ok(())
}

/// Grows a pinned host buffer to at least `n` elements.
fn ensure_pinned<T: cudarc::driver::DeviceRepr>(
    ctx: &Arc<CudaContext>,
    buf: &mut PinnedHostSlice<T>,
    n: usize,
) -> Result<(), CollisionError> {
    if buf.len() < n.max(1) {
        *buf = unsafe { ctx.alloc_pinned_with_flags::<T>(n.max(1), 0) }
            .map_err(drv("pinned host allocation"))?;
    }
    Ok(())
}

/// Uploads `words` (padded to one element so that no pointer is null).
fn upload(stream: &Arc<CudaStream>, words: &[u32]) -> Result<CudaSlice<u32>, CollisionError> {
    if words.is_empty() {
        stream.clone_htod(&[0u32][..])
    } else {
        stream.clone_htod(words)
    }
    .map_err(drv("upload"))
}

fn dptr(s: &CudaSlice<u32>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The robot arrays resident on one device.
struct DeviceRobot {
    frames: CudaSlice<u32>,
    bodies: CudaSlice<u32>,
    verts: CudaSlice<u32>,
    edge_offsets: CudaSlice<u32>,
    edge_targets: CudaSlice<u32>,
    spheres: CudaSlice<u32>,
    self_pairs: CudaSlice<u32>,
    base_state: CudaSlice<u32>,
    var_group: CudaSlice<u32>,
    reach: CudaSlice<u32>,
}

impl DeviceRobot {
    /// Uploads the robot arrays of `model`.
    fn upload(stream: &Arc<CudaStream>, model: &CollisionModel) -> Result<Self, CollisionError> {
        let rw = RobotWords::build(model);
        Ok(DeviceRobot {
            frames: upload(stream, &rw.frames)?,
            bodies: upload(stream, &rw.bodies)?,
            verts: upload(stream, &rw.verts)?,
            edge_offsets: upload(stream, &rw.edge_offsets)?,
            edge_targets: upload(stream, &rw.edge_targets)?,
            spheres: upload(stream, &rw.spheres)?,
            self_pairs: upload(stream, &rw.self_pairs)?,
            base_state: upload(stream, &rw.base_state)?,
            var_group: upload(stream, &rw.var_group)?,
            reach: upload(stream, &rw.reach)?,
        })
    }
}

/// The kernel argument block of a resident robot and scene.
fn model_args(
    stream: &CudaStream,
    r: &DeviceRobot,
    sc: &DeviceScene,
    model: &CollisionModel,
    scene: &SceneModel,
) -> ModelArgs {
    let s = stream;
    ModelArgs {
        frames: dptr(&r.frames, s),
        bodies: dptr(&r.bodies, s),
        verts: dptr(&r.verts, s),
        edge_offsets: dptr(&r.edge_offsets, s),
        edge_targets: dptr(&r.edge_targets, s),
        spheres: dptr(&r.spheres, s),
        self_pairs: dptr(&r.self_pairs, s),
        base_state: dptr(&r.base_state, s),
        var_group: dptr(&r.var_group, s),
        obstacles: dptr(&sc.obstacles, s),
        mesh_verts: dptr(&sc.mesh_verts, s),
        mesh_edge_offsets: dptr(&sc.mesh_edge_offsets, s),
        mesh_edge_targets: dptr(&sc.mesh_edge_targets, s),
        reach: dptr(&r.reach, s),
        num_frames: model.frames.len() as u32,
        num_bodies: model.bodies.len() as u32,
        num_self_pairs: model.self_pairs.len() as u32,
        num_obstacles: scene.obstacles.len() as u32,
        dof: model.group_vars.len() as u32,
        margin: model.margin,
        ..ModelArgs::default()
    }
}

/// The scene arrays resident on one device.
struct DeviceScene {
    obstacles: CudaSlice<u32>,
    mesh_verts: CudaSlice<u32>,
    mesh_edge_offsets: CudaSlice<u32>,
    mesh_edge_targets: CudaSlice<u32>,
    /// The mesh pool as uploaded (to detect changes).
    mesh_host: (Vec<u32>, Vec<u32>, Vec<u32>),
    /// Whether the records follow [`upload::obstacle_order`] (else slot order: the shared
    /// launches address each problem's slots as a range).
    ordered: bool,
    /// The slot of each obstacle record on the device.
    order: Vec<u32>,
    /// The record of each slot (the inverse of `order`).
    position: Vec<u32>,
    /// The obstacle records as on the device (in `order`).
    records: Vec<ObstacleModel>,
    /// The proximity grid of `records` on the device, when built (see [`PROX_MIN_ENV`]).
    prox: Option<DeviceProx>,
    /// `prox` does not describe `records` (the scene changed since it was built).
    prox_stale: bool,
}

/// A proximity grid on the device: its cells, and the grid without them.
struct DeviceProx {
    cells: CudaSlice<u32>,
    grid: ProxGrid,
}

/// The obstacle records of `scene` in the device's `order` (an empty record for a slot it does
/// not hold).
fn records_in(scene: &SceneModel, order: &[u32]) -> Vec<ObstacleModel> {
    order
        .iter()
        .map(|&slot| {
            scene
                .obstacles
                .get(slot as usize)
                .copied()
                .unwrap_or(ObstacleModel::EMPTY)
        })
        .collect()
}

/// The inverse of a permutation of `0..order.len()`.
fn positions(order: &[u32]) -> Vec<u32> {
    let mut pos = vec![0u32; order.len()];
    for (i, &slot) in order.iter().enumerate() {
        if let Some(p) = pos.get_mut(slot as usize) {
            *p = i as u32;
        }
    }
    pos
}

impl DeviceScene {
    /// Uploads the scene arrays of `scene`, the obstacles in [`upload::obstacle_order`] where
    /// `ordered`, else in slot order.
    fn upload(
        stream: &Arc<CudaStream>,
        scene: &SceneModel,
        ordered: bool,
    ) -> Result<Self, CollisionError> {
        let sw = Self::words(scene, ordered);
        Ok(DeviceScene {
            ordered,
            records: records_in(scene, &sw.order),
            prox: None,
            prox_stale: true,
            position: positions(&sw.order),
            order: sw.order,
            obstacles: upload(stream, &sw.obstacles)?,
            mesh_verts: upload(stream, &sw.mesh_verts)?,
            mesh_edge_offsets: upload(stream, &sw.mesh_edge_offsets)?,
            mesh_edge_targets: upload(stream, &sw.mesh_edge_targets)?,
            mesh_host: (sw.mesh_verts, sw.mesh_edge_offsets, sw.mesh_edge_targets),
        })
    }

    /// The first and last device record of the slots `changed` (those it holds), if any.
    fn span_of(&self, changed: &[usize]) -> Option<(usize, usize)> {
        let places = changed
            .iter()
            .filter_map(|&c| self.position.get(c).map(|&p| p as usize));
        places.fold(None, |acc, p| match acc {
            Some((lo, hi)) => Some((p.min(lo), p.max(hi))),
            None => Some((p, p)),
        })
    }

    /// Puts the grid into `args` where it describes the current records, else none.
    fn prox_args(&self, args: &mut ModelArgs, stream: &Arc<CudaStream>) {
        let d = ModelArgs::default();
        (
            args.prox,
            args.prox_lo,
            args.prox_inv_h,
            args.prox_dim,
            args.prox_always,
        ) = match (&self.prox, self.prox_stale) {
            (Some(p), false) => (
                dptr(&p.cells, stream),
                p.grid.lo,
                p.grid.inv_h,
                p.grid.dim,
                p.grid.always,
            ),
            _ => (d.prox, d.prox_lo, d.prox_inv_h, d.prox_dim, d.prox_always),
        };
    }

    fn words(scene: &SceneModel, ordered: bool) -> SceneWords {
        match ordered {
            true => SceneWords::build_ordered(scene),
            false => SceneWords::build(scene),
        }
    }
}

/// The three collision kernels of one module.
struct KernelSet {
    configs: CudaFunction,
    /// Configurations `check_configs` runs at once on the device (one thread each; blocks per
    /// SM by the occupancy calculator times the SMs times the block size), 0 when unknown.
    config_wave: usize,
    naive: CudaFunction,
    balanced: CudaFunction,
    /// `check_motions_tiled`.
    tiled: CudaFunction,
    /// `check_configs_multi` and `check_motions_balanced_multi`: items of several scenes in one
    /// launch (`hub`).
    configs_multi: CudaFunction,
    balanced_multi: CudaFunction,
    /// `check_configs_warp` and `check_motions_balanced_warp`: one warp per item, for batches
    /// of at most [`warp_items`] items.
    configs_warp: CudaFunction,
    balanced_warp: CudaFunction,
    /// `check_configs_half` and `check_configs_rest` of a specialised module with an f16-slot
    /// pass ([`kernels::HALF_KERNEL_NAMES`]), used for batches of at least [`HALF_MIN_ENV`]
    /// configurations.
    half: Option<(CudaFunction, CudaFunction)>,
    /// `sort_keys`, `sort_scan`, `sort_place`: the warp-coherent order of large configuration
    /// batches ([`SORT_MIN_ENV`]).
    sort: [CudaFunction; 3],
    /// `rrtc_plan` and `rrtc_plan_multi` ([`kernels::RRTC_KERNEL_NAMES`]): RRT-Connect resident
    /// on the device ([`crate::planners::device`]).
    rrtc: [CudaFunction; 2],
}

impl KernelSet {
    /// Loads the kernels of `module`; `half`: it was built with an f16-slot pass (its source
    /// defines `GMP_CONFIG_HALF`), so it has [`kernels::HALF_KERNEL_NAMES`] too. (Known from the
    /// source rather than probed: a failed lookup is a CUDA API error, which compute-sanitizer
    /// reports.)
    fn load(module: &Arc<CudaModule>, sms: usize, half: bool) -> Result<Self, String> {
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| format!("kernel '{name}' not found: {e:?}"))
        };
        let configs = f("check_configs")?;
        let per_sm = configs
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .map_or(0, |b| b as usize);
        Ok(Self {
            config_wave: per_sm * sms * BLOCK as usize,
            configs,
            naive: f("check_motions_naive")?,
            balanced: f("check_motions_balanced")?,
            tiled: f("check_motions_tiled")?,
            configs_multi: f("check_configs_multi")?,
            balanced_multi: f("check_motions_balanced_multi")?,
            configs_warp: f("check_configs_warp")?,
            balanced_warp: f("check_motions_balanced_warp")?,
            sort: [f("sort_keys")?, f("sort_scan")?, f("sort_place")?],
            rrtc: [
                f(kernels::RRTC_KERNEL_NAMES[0])?,
                f(kernels::RRTC_KERNEL_NAMES[1])?,
            ],
            half: match half {
                true => Some((
                    f(kernels::HALF_KERNEL_NAMES[0])?,
                    f(kernels::HALF_KERNEL_NAMES[1])?,
                )),
                false => None,
            },
        })
    }

    /// Registers and local memory (bytes) per thread of the configuration kernel and the
    /// balanced and tiled motion kernels, as the driver reports them (for the log line of the
    /// specialised kernels).
    fn resources(&self) -> String {
        let of = |f: &CudaFunction| match (f.num_regs(), f.local_size_bytes()) {
            (Ok(r), Ok(l)) => format!("{r} registers, {l} B local"),
            _ => "unknown".to_string(),
        };
        format!(
            "check_configs {}; check_motions_balanced {}; check_motions_tiled {}",
            of(&self.configs),
            of(&self.balanced),
            of(&self.tiled)
        )
    }
}

/// Everything one checker keeps on one device.
struct DeviceState {
    ctx: Arc<CudaContext>,
    /// Multiprocessors of the device (0 when the driver did not say).
    sms: usize,
    stream: Arc<CudaStream>,
    generic: KernelSet,
    /// The robot-specialised kernels, when they compiled.
    spec: Option<KernelSet>,
    robot: DeviceRobot,
    scene: DeviceScene,
    args: ModelArgs,
    order_off: CudaSlice<u32>,
    order: CudaSlice<u32>,
    order_version: u64,
    input: CudaSlice<u32>,
    staging: PinnedHostSlice<u32>,
    out: CudaSlice<u8>,
    out_host: PinnedHostSlice<u8>,
    /// `fk_frames` of the generic module.
    fk: CudaFunction,
    /// Frame poses of the last forward-kinematics round (12 floats per configuration and frame).
    fk_out: CudaSlice<u32>,
    fk_host: PinnedHostSlice<u32>,
    events: [CudaEvent; 4],
    /// Copy-in and copy-out streams of the pipelined configuration checks.
    h2d: Arc<CudaStream>,
    d2h: Arc<CudaStream>,
    /// [`PIPE_EVENTS`] events per pipeline slot (copy in, kernels, copy out, the exact pass on
    /// the rest stream: start and end; the f16 pass done).
    pipe_events: Vec<CudaEvent>,
    /// Recorded on the kernel stream before the first piece of a pipelined batch: the origin
    /// of the pieces' busy intervals ([`union_ms`]).
    pipe_t0: Option<CudaEvent>,
    /// Batches of at most this many items run one warp per item (see [`warp_items`]).
    warp_items: usize,
    /// The queues of the f16-slot pass (each: its count, then the undecided configurations).
    /// A single batch uses the first; in a pipelined batch the pieces use the two in turn, so
    /// that the f16 pass of one piece fills one while the exact pass of the piece before reads
    /// the other.
    half_queues: [CudaSlice<u32>; 2],
    /// The stream of the exact pass over the f16 pass's queue in pipelined batches
    /// (`check_configs_rest`): it runs beside the next piece's kernels (see
    /// [`DeviceState::configs`]).
    rest_stream: Arc<CudaStream>,
    /// Buffers of the warp-coherent order of large configuration batches.
    sort: SortBufs,
    /// [`specialise::SpecialisedSource::prox_reach`] of the specialised kernels: the reach of
    /// the proximity grid they read (`None`: they read none, or the state never builds one).
    prox_reach: Option<f64>,
    /// The device planner's buffers, once it has run ([`rrtc`]).
    rrtc: Option<rrtc::RrtcBufs>,
}

/// The device buffers of the warp-coherent order ([`SORT_MIN_ENV`]). The pieces of a batch run
/// one after another on the kernel stream, so they share them.
struct SortBufs {
    /// [`sort_spec`] of the checker's joint space.
    spec: CudaSlice<u32>,
    /// Configurations per key cell, then each cell's next free place ([`SORT_BINS`]), then
    /// the words `sort_scan` coordinates its blocks with ([`SORT_HIST_WORDS`]).
    hist: CudaSlice<u32>,
    /// The key of each configuration.
    keys: CudaSlice<u32>,
    /// The rank of each configuration among those of its key cell.
    ranks: CudaSlice<u32>,
    /// The configurations' indices (in their piece) in key order: the order they are checked in.
    order: CudaSlice<u32>,
}

impl SortBufs {
    /// Room for `n` configurations.
    fn ensure(&mut self, stream: &Arc<CudaStream>, n: usize) -> Result<(), CollisionError> {
        ensure_dev(stream, &mut self.keys, n)?;
        ensure_dev(stream, &mut self.ranks, n)?;
        ensure_dev(stream, &mut self.order, n)
    }
}

/// Per-device timings of one query.
#[derive(Clone, Copy, Debug, Default)]
struct DevTimes {
    /// Host staging of the configurations (wall time, ms).
    stage: f64,
    htod: f64,
    kernel: f64,
    dtoh: f64,
    launches: u32,
}

impl DeviceState {
    /// Sets up device `ordinal`; with `spec` (source and register cap) also the robot-specialised
    /// kernels, whose failure to compile or load is returned beside the state (the generic
    /// kernels then run). `ordered`: the obstacles go to the device in
    /// [`upload::obstacle_order`] (else in slot order).
    fn new(
        ordinal: usize,
        model: &CollisionModel,
        scene: &SceneModel,
        spec: Option<(&str, Option<usize>)>,
        sort_spec: &[u32],
        ordered: bool,
    ) -> Result<(Self, Option<String>), CollisionError> {
        let dm = device_module(ordinal)?;
        let ctx = dm.ctx.clone();
        let stream = ctx.new_stream().map_err(drv("creating a stream"))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_or(0, |c| c.max(0) as usize);
        let generic = KernelSet::load(&dm.module, sms, false).map_err(backend_err)?;
        let (spec, spec_error) = match spec {
            None => (None, None),
            Some((source, maxrreg)) => {
                match specialised_module(&dm, ordinal, source, maxrreg)
                    .and_then(|module| KernelSet::load(&module, sms, has_half_pass(source)))
                {
                    Ok(k) => (Some(k), None),
                    Err(e) => (None, Some(e)),
                }
            }
        };
        let fk = dm
            .module
            .load_function("fk_frames")
            .map_err(|e| backend_err(format!("kernel 'fk_frames' not found: {e:?}")))?;
        let robot = DeviceRobot::upload(&stream, model)?;
        let scene_dev = DeviceScene::upload(&stream, scene, ordered)?;
        let ev = || {
            ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("creating an event"))
        };
        let events = [ev()?, ev()?, ev()?, ev()?];
        let mut st = DeviceState {
            sms,
            generic,
            spec,
            order_off: upload(&stream, &[])?,
            order: upload(&stream, &[])?,
            order_version: 0,
            input: upload(&stream, &[])?,
            staging: unsafe { ctx.alloc_pinned_with_flags::<u32>(1, 0) }
                .map_err(drv("pinned host allocation"))?,
            out: unsafe { stream.alloc::<u8>(1) }.map_err(drv("device allocation"))?,
            out_host: unsafe { ctx.alloc_pinned_with_flags::<u8>(1, 0) }
                .map_err(drv("pinned host allocation"))?,
            fk,
            fk_out: unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
            fk_host: unsafe { ctx.alloc_pinned_with_flags::<u32>(1, 0) }
                .map_err(drv("pinned host allocation"))?,
            events,
            h2d: ctx.new_stream().map_err(drv("creating a stream"))?,
            d2h: ctx.new_stream().map_err(drv("creating a stream"))?,
            pipe_events: Vec::new(),
            pipe_t0: None,
            warp_items: warp_items(model),
            half_queues: [
                unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
                unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
            ],
            rest_stream: ctx.new_stream().map_err(drv("creating a stream"))?,
            sort: SortBufs {
                spec: upload(&stream, sort_spec)?,
                hist: unsafe { stream.alloc::<u32>(SORT_HIST_WORDS) }
                    .map_err(drv("device allocation"))?,
                keys: unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
                ranks: unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
                order: unsafe { stream.alloc::<u32>(1) }.map_err(drv("device allocation"))?,
            },
            robot,
            scene: scene_dev,
            prox_reach: None,
            rrtc: None,
            args: ModelArgs::default(),
            ctx,
            stream,
        };
        st.refresh_args(model, scene);
        st.stream.synchronize().map_err(drv("upload"))?;
        Ok((st, spec_error))
    }

    /// The kernels of `variant` (the generic ones when the specialised ones are missing).
    fn kernels(&self, variant: KernelVariant) -> &KernelSet {
        match (variant, &self.spec) {
            (KernelVariant::Specialised, Some(k)) => k,
            _ => &self.generic,
        }
    }

    /// Recomputes the kernel argument block from the current buffers.
    fn refresh_args(&mut self, model: &CollisionModel, scene: &SceneModel) {
        self.args = model_args(&self.stream, &self.robot, &self.scene, model, scene);
        self.scene.prox_args(&mut self.args, &self.stream);
    }

    /// Builds and uploads the proximity grid of the current scene for the specialised kernels
    /// when they read one ([`Self::prox_reach`]), the scene holds its obstacles in visiting
    /// order, the batch has at least [`PROX_MIN_ENV`] configurations and the grid is missing
    /// or stale; then puts it into the kernel arguments.
    fn ensure_prox(&mut self, variant: KernelVariant, n: usize) -> Result<(), CollisionError> {
        let Some(reach) = self.prox_reach else {
            return Ok(());
        };
        if variant != KernelVariant::Specialised
            || self.spec.is_none()
            || !self.scene.ordered
            || !self.scene.prox_stale
            || n < batch_min(PROX_MIN_ENV, PROX_MIN_DEFAULT)
        {
            return Ok(());
        }
        let refs: Vec<&ObstacleModel> = self.scene.records.iter().collect();
        let mut grid = ProxGrid::build(&refs, reach, PROX_CELL);
        // (A grid without cells answers from `always` alone; the kernels still read a word.)
        let words = if grid.cells.is_empty() {
            vec![0u32]
        } else {
            std::mem::take(&mut grid.cells)
        };
        let cells = upload(&self.stream, &words)?;
        self.scene.prox = Some(DeviceProx { cells, grid });
        self.scene.prox_stale = false;
        self.scene.prox_args(&mut self.args, &self.stream);
        Ok(())
    }

    /// Uploads the changed obstacle slots (one copy of the range they span) and, when the mesh
    /// pool changed, the whole pool.
    fn sync_scene(
        &mut self,
        model: &CollisionModel,
        scene: &SceneModel,
        changed: &[usize],
    ) -> Result<(), CollisionError> {
        // The records of changed slots keep their places in the visiting order (the device
        // holds one record per slot of the last whole upload); a scene with another number of
        // slots is uploaded whole, in a new order.
        if scene.obstacles.len() != self.scene.order.len() {
            let sw = DeviceScene::words(scene, self.scene.ordered);
            self.scene.obstacles = upload(&self.stream, &sw.obstacles)?;
            self.scene.position = positions(&sw.order);
            self.scene.records = records_in(scene, &sw.order);
            self.scene.order = sw.order;
            self.scene.prox_stale = true;
        } else if let Some((lo, hi)) = self.scene.span_of(changed) {
            let mut words = Vec::with_capacity((hi - lo + 1) * OBSTACLE_WORDS);
            for (k, &slot) in self.scene.order[lo..=hi].iter().enumerate() {
                let o = scene
                    .obstacles
                    .get(slot as usize)
                    .unwrap_or(&ObstacleModel::EMPTY);
                obstacle_words(o, &mut words);
                if let Some(r) = self.scene.records.get_mut(lo + k) {
                    *r = *o;
                }
            }
            self.scene.prox_stale = true;
            let mut dst = self
                .scene
                .obstacles
                .slice_mut(lo * OBSTACLE_WORDS..(hi + 1) * OBSTACLE_WORDS);
            self.stream
                .memcpy_htod(&words[..], &mut dst)
                .map_err(drv("obstacle upload"))?;
        }
        let mesh_verts = SceneWords::mesh_vert_words(scene);
        let h = &self.scene.mesh_host;
        if h.0 != mesh_verts || h.1 != scene.mesh_edge_offsets || h.2 != scene.mesh_edge_targets {
            self.scene.mesh_verts = upload(&self.stream, &mesh_verts)?;
            self.scene.mesh_edge_offsets = upload(&self.stream, &scene.mesh_edge_offsets)?;
            self.scene.mesh_edge_targets = upload(&self.stream, &scene.mesh_edge_targets)?;
            self.scene.mesh_host = (
                mesh_verts,
                scene.mesh_edge_offsets.clone(),
                scene.mesh_edge_targets.clone(),
            );
        }
        self.refresh_args(model, scene);
        self.stream.synchronize().map_err(drv("scene upload"))
    }

    fn set_base_state(&mut self, base: &[f32]) -> Result<(), CollisionError> {
        let words: Vec<u32> = base.iter().map(|v| v.to_bits()).collect();
        if words.is_empty() {
            return Ok(());
        }
        self.stream
            .memcpy_htod(&words[..], &mut self.robot.base_state)
            .map_err(drv("base state upload"))?;
        self.stream.synchronize().map_err(drv("base state upload"))
    }

    fn ensure_order(&mut self, table: &OrderTable) -> Result<(), CollisionError> {
        if self.order_version != table.version {
            self.order_off = upload(&self.stream, &table.off)?;
            self.order = upload(&self.stream, &table.order)?;
            self.order_version = table.version;
        }
        Ok(())
    }

    fn ensure_buffers(&mut self, words: usize, outs: usize) -> Result<(), CollisionError> {
        ensure_dev(&self.stream, &mut self.input, words)?;
        ensure_pinned(&self.ctx, &mut self.staging, words)?;
        ensure_dev(&self.stream, &mut self.out, outs)?;
        ensure_pinned(&self.ctx, &mut self.out_host, outs)?;
        Ok(())
    }

    /// Copies `staging[..words]` in; the caller launches; then copies `out[..outs]` back and
    /// waits. `launch` gets the state and returns after enqueueing its kernel.
    fn round(
        &mut self,
        words: usize,
        outs: usize,
        times: &mut DevTimes,
        launch: impl FnOnce(&mut DeviceState) -> Result<(), CollisionError>,
    ) -> Result<(), CollisionError> {
        self.round_with(words, times, launch, |s, st| {
            let src = s.out.slice(0..outs);
            let dst = &mut s.out_host.as_mut_slice().map_err(drv("pinned buffer"))?[..outs];
            st.memcpy_dtoh(&src, dst).map_err(drv("copy to host"))
        })
    }

    /// One timed round on the state's stream: copies `staging[..words]` in, `launch` enqueues
    /// its kernel, `fetch` enqueues the copy of its results back; then waits and adds the
    /// copy and kernel times (CUDA events) to `times`.
    fn round_with(
        &mut self,
        words: usize,
        times: &mut DevTimes,
        launch: impl FnOnce(&mut DeviceState) -> Result<(), CollisionError>,
        fetch: impl FnOnce(&mut DeviceState, &Arc<CudaStream>) -> Result<(), CollisionError>,
    ) -> Result<(), CollisionError> {
        let st = self.stream.clone();
        self.events[0].record(&st).map_err(drv("event"))?;
        {
            let src = &self.staging.as_slice().map_err(drv("pinned buffer"))?[..words];
            let mut dst = self.input.slice_mut(0..words);
            st.memcpy_htod(src, &mut dst)
                .map_err(drv("copy to device"))?;
        }
        self.events[1].record(&st).map_err(drv("event"))?;
        launch(self)?;
        self.events[2].record(&st).map_err(drv("event"))?;
        fetch(self, &st)?;
        self.events[3].record(&st).map_err(drv("event"))?;
        st.synchronize().map_err(drv("kernel execution"))?;
        let el = |a: usize, b: usize| -> Result<f64, CollisionError> {
            Ok(self.events[a]
                .elapsed_ms(&self.events[b])
                .map_err(drv("event timing"))? as f64)
        };
        times.htod += el(0, 1)?;
        times.kernel += el(1, 2)?;
        times.dtoh += el(2, 3)?;
        times.launches += 1;
        Ok(())
    }

    /// Checks `values.len() / dof` configurations (f32, row-major), pipelined: the batch goes
    /// in pieces through a ring of [`PIPE_SLOTS`] buffer slots, each piece copied in on the
    /// copy-in stream, checked on the kernel stream and copied back on the copy-out stream, so
    /// that staging the next piece on the host, copying it in and checking the previous one
    /// overlap (see [`pipeline_shape`]).
    fn configs(
        &mut self,
        values: ConfigValues,
        rows: Rows,
        variant: KernelVariant,
        out: &mut [bool],
        times: &mut DevTimes,
    ) -> Result<(), CollisionError> {
        self.ensure_prox(variant, out.len())?;
        let f_configs = self.kernels(variant).configs.clone();
        let half = self.kernels(variant).half.clone();
        // The device's wave, whatever WHOLE_WAVES_ENV says about rounding pieces to it.
        let device_wave = self.kernels(variant).config_wave;
        let wave_or_guess = if device_wave > 0 {
            device_wave
        } else {
            1 << 16
        };
        // Pipelined pieces overlap each exact pass with the next piece; a batch of one piece
        // cannot, so it keeps the older, higher default.
        let half_from = half_min(HALF_MIN_WAVES * wave_or_guess);
        let half_from_one_piece = half_min(HALF_MIN_ONE_PIECE_WAVES * wave_or_guess);
        // The exact pass over the queue loops over it: a wave of threads is enough.
        let rest_threads = if device_wave > 0 {
            device_wave
        } else {
            usize::MAX
        };
        let dof = rows.dof;
        let n = out.len();
        let wave = match std::env::var(WHOLE_WAVES_ENV) {
            Ok(v) if v.trim() == "0" => 0,
            _ => self.kernels(variant).config_wave,
        };
        let (piece, slots) = pipeline_shape(n, wave);
        let one_round = std::env::var(SMALL_ROUND_ENV).map_or(true, |v| v.trim() != "0");
        // (A state without a sort key for these rows, as the hub's, never sorts.)
        let sort_from = match self.sort.spec.len() >= 3 * dof {
            true => sort_min(SORT_MIN_WAVES * wave_or_guess),
            false => usize::MAX,
        };
        let sort_fns = self.kernels(variant).sort.clone();
        if slots == 1 && one_round {
            // One piece: copy in, check and copy back on the kernel stream, one wait (no
            // cross-stream events: the latency of a small batch is what a planner waits for).
            // Few configurations: one warp each.
            let (f, lanes) = match n <= self.warp_items {
                true => (self.kernels(variant).configs_warp.clone(), 32),
                false => (f_configs, 1),
            };
            let half = half
                .as_ref()
                .filter(|_| lanes == 1 && n >= half_from_one_piece);
            let sorted = lanes == 1 && n >= sort_from;
            self.ensure_buffers(n * dof, n)?;
            if half.is_some() {
                ensure_dev(&self.stream, &mut self.half_queues[0], n + 1)?;
            }
            if sorted {
                self.sort.ensure(&self.stream, n)?;
            }
            self.stage(values, &rows, 0..n, 0, times)?;
            self.round(n * dof, n, times, |s| {
                let half = half.map(|kernels| HalfLaunch {
                    kernels,
                    queue: &mut s.half_queues[0],
                    rest_threads,
                    defer_rest: false,
                });
                let input = (&s.input, 0..n * dof);
                let output = (&mut s.out, 0..n);
                match sorted {
                    true => launch_sorted(
                        &s.stream,
                        (&sort_fns, &mut s.sort, dof),
                        (&f, lanes),
                        &s.args,
                        input,
                        output,
                        half,
                    ),
                    false => {
                        launch_configs(&s.stream, (&f, lanes), &s.args, input, output, half, None)
                    }
                }
            })?;
            let host = self.out_host.as_slice().map_err(drv("pinned buffer"))?;
            for (o, &h) in out.iter_mut().zip(&host[..n]) {
                *o = h != 0;
            }
            return Ok(());
        }
        self.ensure_buffers(piece * slots * dof, piece * slots)?;
        self.ensure_pipe_events(slots)?;
        if half.is_some() {
            // The pieces' f16 passes run one after another on the kernel stream; each piece's
            // exact pass runs on the rest stream beside the next piece's kernels, so the pieces
            // take the two queues in turn.
            for queue in &mut self.half_queues {
                ensure_dev(&self.stream, queue, piece + 1)?;
            }
        }
        let pieces = n.div_ceil(piece);
        // The slot whose exact pass the kernel stream still has to wait for.
        let mut rest_pending: Option<usize> = None;
        if piece >= sort_from {
            self.sort.ensure(&self.stream, piece)?;
        }
        let mut pending = std::collections::VecDeque::with_capacity(slots);
        // The kernel time of the batch: the union of the intervals in which the kernel stream
        // ran a piece's kernels or the rest stream a piece's exact pass (they overlap).
        let mut busy: Vec<(f64, f64)> = Vec::with_capacity(2 * pieces);
        if let Some(t0) = &self.pipe_t0 {
            t0.record(&self.stream).map_err(drv("event"))?;
        }
        let result = (|| {
            for j in 0..pieces {
                let slot = j % slots;
                if pending.len() == slots {
                    if let Some(done) = pending.pop_front() {
                        self.finish_piece(done, out, times, &mut busy)?;
                    }
                }
                let start = j * piece;
                let cn = piece.min(n - start);
                let (w0, words) = (slot * piece * dof, cn * dof);
                let o0 = slot * piece;
                self.stage(values, &rows, start..start + cn, w0, times)?;
                let e0 = slot * PIPE_EVENTS;
                let ev = &self.pipe_events[e0..e0 + PIPE_EVENTS];
                ev[0].record(&self.h2d).map_err(drv("event"))?;
                {
                    let stg = self.staging.as_slice().map_err(drv("pinned buffer"))?;
                    let dst = dptr(&self.input, &self.h2d) + (w0 * 4) as u64;
                    // SAFETY: the pinned staging buffer outlives the copy (every call ends by
                    // waiting for its pieces) and is not written again before the copy of this
                    // slot is known to be done (`finish_piece`); the device range is in bounds.
                    unsafe {
                        cudarc::driver::result::memcpy_htod_async(
                            dst,
                            &stg[w0..w0 + words],
                            self.h2d.cu_stream(),
                        )
                    }
                    .map_err(drv("copy to device"))?;
                }
                ev[1].record(&self.h2d).map_err(drv("event"))?;
                self.stream.wait(&ev[1]).map_err(drv("stream wait"))?;
                ev[2].record(&self.stream).map_err(drv("event"))?;
                // The f16 pass's undecided configurations: piece j takes queue j % 2.
                let q = j % 2;
                let half_piece = half.as_ref().filter(|_| cn >= half_from);
                let half_launch = half_piece.map(|kernels| HalfLaunch {
                    kernels,
                    queue: &mut self.half_queues[q],
                    rest_threads,
                    defer_rest: true,
                });
                let input = (&self.input, w0..w0 + words);
                let output = (&mut self.out, o0..o0 + cn);
                if cn >= sort_from {
                    launch_sorted(
                        &self.stream,
                        (&sort_fns, &mut self.sort, dof),
                        (&f_configs, 1),
                        &self.args,
                        input,
                        output,
                        half_launch,
                    )?;
                } else {
                    launch_configs(
                        &self.stream,
                        (&f_configs, 1),
                        &self.args,
                        input,
                        output,
                        half_launch,
                        None,
                    )?;
                }
                // The exact pass over this piece's queue runs on the rest stream, beside the
                // next piece's sort and f16 pass: alone, its few warps (the configurations
                // within about a millimetre of a contact) left the device nearly idle for the
                // latency of one exact check. The kernel stream waits for it one piece later
                // or at once after the last piece; the copy back of this piece waits for it
                // too. Queue q is cleared again two pieces later, after that wait. The kernel
                // time counts the union of both streams' intervals (`busy`).
                if let Some(p) = rest_pending.take() {
                    self.stream
                        .wait(&self.pipe_events[p * PIPE_EVENTS + 7])
                        .map_err(drv("stream wait"))?;
                }
                if let Some(kernels) = half_piece {
                    let half_done = &self.pipe_events[e0 + 8];
                    half_done.record(&self.stream).map_err(drv("event"))?;
                    self.rest_stream
                        .wait(half_done)
                        .map_err(drv("stream wait"))?;
                    self.pipe_events[e0 + 6]
                        .record(&self.rest_stream)
                        .map_err(drv("event"))?;
                    launch_rest(
                        &self.rest_stream,
                        &kernels.1,
                        &self.args,
                        (&self.input, w0..w0 + words),
                        (&mut self.out, o0..o0 + cn),
                        &self.half_queues[q],
                        rest_threads,
                    )?;
                    let rest_done = &self.pipe_events[e0 + 7];
                    rest_done.record(&self.rest_stream).map_err(drv("event"))?;
                    self.d2h.wait(rest_done).map_err(drv("stream wait"))?;
                    if j + 1 == pieces {
                        self.stream.wait(rest_done).map_err(drv("stream wait"))?;
                    } else {
                        rest_pending = Some(slot);
                    }
                }
                let ev = &self.pipe_events[e0..e0 + PIPE_EVENTS];
                ev[3].record(&self.stream).map_err(drv("event"))?;
                self.d2h.wait(&ev[3]).map_err(drv("stream wait"))?;
                ev[4].record(&self.d2h).map_err(drv("event"))?;
                {
                    let src = {
                        let (p, _sync) = self.out.device_ptr(&self.d2h);
                        p + o0 as u64
                    };
                    let host = self.out_host.as_mut_slice().map_err(drv("pinned buffer"))?;
                    // SAFETY: as above; the host range is read only after this slot's last
                    // event completed.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut host[o0..o0 + cn],
                            src,
                            self.d2h.cu_stream(),
                        )
                    }
                    .map_err(drv("copy to host"))?;
                }
                ev[5].record(&self.d2h).map_err(drv("event"))?;
                pending.push_back((slot, start, cn, o0, half_piece.is_some()));
            }
            while let Some(done) = pending.pop_front() {
                self.finish_piece(done, out, times, &mut busy)?;
            }
            times.kernel += union_ms(&mut busy);
            Ok(())
        })();
        if result.is_err() {
            // Nothing in flight may outlive the call (the buffers are reused).
            let _ = self.h2d.synchronize();
            let _ = self.stream.synchronize();
            let _ = self.rest_stream.synchronize();
            let _ = self.d2h.synchronize();
        }
        result
    }

    /// Rounds configurations `range` of `values` (rows of `rows.dof`) to f32 into the staging
    /// buffer at word `at`, failing on the first NaN or infinity (named by its row and joint).
    fn stage(
        &mut self,
        values: ConfigValues,
        rows: &Rows,
        range: std::ops::Range<usize>,
        at: usize,
        times: &mut DevTimes,
    ) -> Result<(), CollisionError> {
        let started = std::time::Instant::now();
        let dof = rows.dof;
        let words = range.len() * dof;
        let stg = self.staging.as_mut_slice().map_err(drv("pinned buffer"))?;
        let src = values.slice(range.start * dof..range.end * dof);
        let bad = stage_values(src, &mut stg[at..at + words]);
        times.stage += started.elapsed().as_secs_f64() * 1e3;
        match bad {
            Some(i) => {
                let v = range.start * dof + i;
                Err(CollisionError::NonFinite {
                    index: rows.first + v / dof,
                    joint: rows.names.get(v % dof).cloned().unwrap_or_default(),
                })
            }
            None => Ok(()),
        }
    }

    /// Waits for piece `(slot, start, count, out offset, with an exact pass on the rest
    /// stream)` of [`DeviceState::configs`], adds its copy timings, its busy intervals to `busy`
    /// (milliseconds from `pipe_t0`: its kernels, its exact pass) and writes its verdicts.
    fn finish_piece(
        &mut self,
        (slot, start, cn, o0, rest): (usize, usize, usize, usize, bool),
        out: &mut [bool],
        times: &mut DevTimes,
        busy: &mut Vec<(f64, f64)>,
    ) -> Result<(), CollisionError> {
        let ev = &self.pipe_events[slot * PIPE_EVENTS..(slot + 1) * PIPE_EVENTS];
        ev[5].synchronize().map_err(drv("kernel execution"))?;
        let el = |a: usize, b: usize| -> Result<f64, CollisionError> {
            Ok(ev[a].elapsed_ms(&ev[b]).map_err(drv("event timing"))? as f64)
        };
        times.htod += el(0, 1)?;
        times.dtoh += el(4, 5)?;
        // The copy back waited for both streams' work of this piece, so its events are done.
        // (Should an interval not be readable, the kernel stream's time of the piece counts.)
        let from_t0 = |e: usize| -> Option<f64> {
            let t0 = self.pipe_t0.as_ref()?;
            t0.elapsed_ms(&ev[e]).ok().map(f64::from)
        };
        let spans: Option<Vec<(f64, f64)>> = std::iter::once((2, 3))
            .chain(rest.then_some((6, 7)))
            .map(|(a, b)| Some((from_t0(a)?, from_t0(b)?)))
            .collect();
        match spans {
            Some(v) => busy.extend(v),
            None => times.kernel += el(2, 3)?,
        }
        times.launches += 1;
        let host = self.out_host.as_slice().map_err(drv("pinned buffer"))?;
        for (o, &h) in out[start..start + cn].iter_mut().zip(&host[o0..o0 + cn]) {
            *o = h != 0;
        }
        Ok(())
    }

    /// At least `slots` pipeline slots of [`PIPE_EVENTS`] events each, and the origin event.
    fn ensure_pipe_events(&mut self, slots: usize) -> Result<(), CollisionError> {
        let ctx = &self.ctx;
        let new = || {
            ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("creating an event"))
        };
        while self.pipe_events.len() < slots * PIPE_EVENTS {
            self.pipe_events.push(new()?);
        }
        if self.pipe_t0.is_none() {
            self.pipe_t0 = Some(new()?);
        }
        Ok(())
    }

    /// World poses of the moving frames of `values.len() / dof` configurations (f32, row-major)
    /// into `out` (`num_frames` per configuration), in rounds of at most [`FK_CHUNK`]
    /// configurations.
    fn frames(
        &mut self,
        values: &[f32],
        out: &mut [Xf],
        times: &mut DevTimes,
    ) -> Result<(), CollisionError> {
        let dof = self.args.dof as usize;
        let nf = self.args.num_frames as usize;
        let n = values.len().checked_div(dof).unwrap_or(0);
        if out.len() != n * nf {
            return Err(backend_err(format!(
                "forward kinematics: room for {} poses, {n} configurations of {nf} frames",
                out.len()
            )));
        }
        if n == 0 || nf == 0 {
            return Ok(());
        }
        let func = self.fk.clone();
        let mut start = 0;
        while start < n {
            let cn = (n - start).min(FK_CHUNK);
            let words = cn * dof;
            let outs = cn * nf * 12;
            ensure_dev(&self.stream, &mut self.input, words)?;
            ensure_pinned(&self.ctx, &mut self.staging, words)?;
            ensure_dev(&self.stream, &mut self.fk_out, outs)?;
            ensure_pinned(&self.ctx, &mut self.fk_host, outs)?;
            {
                let stg = self.staging.as_mut_slice().map_err(drv("pinned buffer"))?;
                for (d, v) in stg[..words]
                    .iter_mut()
                    .zip(&values[start * dof..(start + cn) * dof])
                {
                    *d = v.to_bits();
                }
            }
            self.round_with(
                words,
                times,
                |s| {
                    let input = s.input.slice(0..words);
                    let cn32 = cn as u32;
                    let mut b = s.stream.launch_builder(&func);
                    b.arg(&s.args).arg(&input).arg(&cn32).arg(&mut s.fk_out);
                    unsafe { b.launch(launch_cfg(cn)) }.map_err(drv("launching fk_frames"))?;
                    Ok(())
                },
                |s, st| {
                    let src = s.fk_out.slice(0..outs);
                    let dst = &mut s.fk_host.as_mut_slice().map_err(drv("pinned buffer"))?[..outs];
                    st.memcpy_dtoh(&src, dst).map_err(drv("copy to host"))
                },
            )?;
            let host = self.fk_host.as_slice().map_err(drv("pinned buffer"))?;
            for (o, w) in out[start * nf..(start + cn) * nf]
                .iter_mut()
                .zip(host[..outs].chunks_exact(12))
            {
                *o = xf_of_words(w);
            }
            start += cn;
        }
        Ok(())
    }

    /// Checks motions `range` of `p` into `out` (one status per motion of `range`).
    ///
    /// The range goes in pieces ([`motion_pieces`]) through two buffer slots on the state's
    /// stream: the host lays out and stages piece k + 1 while the device checks piece k, and
    /// reads piece k's flags while it checks piece k + 1. With `multi` (the scene of each motion
    /// of `p` and the device table of the scenes), every piece runs
    /// `check_motions_balanced_multi` whatever `kernel` says.
    #[allow(clippy::too_many_arguments)]
    fn motions(
        &mut self,
        p: &PreparedMotions,
        range: std::ops::Range<usize>,
        (kernel, variant): (MotionKernel, KernelVariant),
        table: &OrderTable,
        multi: Option<(&[u32], &hub::DeviceScenes)>,
        out: &mut [MotionStatus],
        times: &mut DevTimes,
    ) -> Result<(), CollisionError> {
        self.ensure_order(table)?;
        if multi.is_none() {
            // The sweep checks read the proximity grid too, from as many configurations as
            // the configuration checks (the grid describes this state's own scene only).
            let items: usize = p.segments[range.clone()]
                .iter()
                .map(|&s| s as usize + 1)
                .sum();
            self.ensure_prox(variant, items)?;
        }
        let kernel = if multi.is_some() {
            MotionKernel::Balanced
        } else {
            kernel
        };
        let fns = {
            let k = self.kernels(variant);
            MotionFns {
                naive: k.naive.clone(),
                balanced: match multi {
                    Some(_) => k.balanced_multi.clone(),
                    None => k.balanced.clone(),
                },
                warp: multi.is_none().then(|| k.balanced_warp.clone()),
                tiled: k.tiled.clone(),
            }
        };
        let dof = self.args.dof as usize;
        let max_pieces = std::env::var(MOTION_PIECES_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(MOTION_PIECES);
        let pieces = motion_pieces(&p.segments[range.clone()], max_pieces);
        let (mut slot_words, mut slot_outs) = (0, 0);
        for r in &pieces {
            let seg = &p.segments[range.start + r.start..range.start + r.end];
            slot_words = slot_words.max(motion_words_bound(seg, dof));
            slot_outs = slot_outs.max(2 * r.len());
        }
        let slots = pieces.len().min(2);
        self.ensure_buffers(slots * slot_words, slots * slot_outs)?;
        self.ensure_pipe_events(slots)?;
        let result = (|| {
            let mut inflight: Option<MotionPiece> = None;
            for (k, r) in pieces.iter().enumerate() {
                let slot = k % 2;
                let piece = MotionPiece {
                    slot,
                    first: r.start,
                    cn: r.len(),
                    kernel,
                    w0: slot * slot_words,
                    o0: slot * slot_outs,
                };
                let piece = self.launch_motion_piece(p, range.start, piece, &fns, multi, times)?;
                if let Some(done) = inflight.replace(piece) {
                    self.finish_motion_piece(&done, out, times)?;
                }
            }
            match inflight {
                Some(done) => self.finish_motion_piece(&done, out, times),
                None => Ok(()),
            }
        })();
        if result.is_err() {
            // Nothing may still read or write the buffers once the call returns.
            let _ = self.stream.synchronize();
        }
        result
    }

    /// Lays out and stages one piece of motions (`base + piece.first ..`) into its slot and
    /// enqueues its copy in, kernel and copy back. Returns the piece with the kernel it runs.
    fn launch_motion_piece(
        &mut self,
        p: &PreparedMotions,
        base: usize,
        mut piece: MotionPiece,
        fns: &MotionFns,
        multi: Option<(&[u32], &hub::DeviceScenes)>,
        times: &mut DevTimes,
    ) -> Result<MotionPiece, CollisionError> {
        let started = Instant::now();
        let dof = self.args.dof as usize;
        let (i, cn) = (base + piece.first, piece.cn);
        let j = i + cn;
        let seg = &p.segments[i..j];
        let items: u64 = seg.iter().map(|&n| u64::from(n) + 1).sum();
        // Staging layout: start | diff | segments [| perm | rank_off] [| scene of each].
        // Tiled: `perm` holds the sorted motions then their tile offsets, `rank_off` the tiles
        // (see `tiled_layout`). Few items go to the warp-per-item kernel as balanced.
        let kernel = match piece.kernel {
            MotionKernel::Tiled if items as usize <= self.warp_items => MotionKernel::Balanced,
            k => k,
        };
        piece.kernel = kernel;
        let (perm, rank_off) = match kernel {
            MotionKernel::Naive => (Vec::new(), Vec::new()),
            MotionKernel::Balanced => rank_major(seg),
            MotionKernel::Tiled => {
                let (mut perm, part_off, tiles) = tiled_layout(seg);
                perm.extend(part_off);
                (perm, tiles)
            }
        };
        let scene_of = multi.map_or(&[][..], |(sc, _)| &sc[i..j]);
        let words = 2 * cn * dof + cn + perm.len() + rank_off.len() + scene_of.len();
        if words > motion_words_bound(seg, dof) {
            return Err(backend_err(format!(
                "motion staging of {words} words exceeds its slot of {} words",
                motion_words_bound(seg, dof)
            )));
        }
        let w0 = piece.w0;
        {
            let stg =
                &mut self.staging.as_mut_slice().map_err(drv("pinned buffer"))?[w0..w0 + words];
            let (st, rest) = stg.split_at_mut(cn * dof);
            let (df, rest) = rest.split_at_mut(cn * dof);
            for (o, v) in st.iter_mut().zip(&p.start[i * dof..j * dof]) {
                *o = v.to_bits();
            }
            for (o, v) in df.iter_mut().zip(&p.diff[i * dof..j * dof]) {
                *o = v.to_bits();
            }
            let (sg, rest) = rest.split_at_mut(cn);
            sg.copy_from_slice(seg);
            let (pm, rest) = rest.split_at_mut(perm.len());
            pm.copy_from_slice(&perm);
            let (ro, rest) = rest.split_at_mut(rank_off.len());
            ro.copy_from_slice(&rank_off);
            rest.copy_from_slice(scene_of);
        }
        times.stage += started.elapsed().as_secs_f64() * 1e3;
        let a_diff = w0 + cn * dof;
        let a_seg = w0 + 2 * cn * dof;
        let a_perm = a_seg + cn;
        let a_rank = a_perm + perm.len();
        let a_scene = a_rank + rank_off.len();
        let o0 = piece.o0;
        let st = self.stream.clone();
        let ev = &self.pipe_events[piece.slot * PIPE_EVENTS..(piece.slot + 1) * PIPE_EVENTS];
        ev[0].record(&st).map_err(drv("event"))?;
        {
            let stg = self.staging.as_slice().map_err(drv("pinned buffer"))?;
            let dst = dptr(&self.input, &st) + (w0 * 4) as u64;
            // SAFETY: the pinned staging buffer outlives the copy (every call ends by waiting
            // for its pieces, or for the stream on an error), and this slot is not written again
            // before the copy is known to be done (`finish_motion_piece` of this piece); the
            // device range is in bounds (`ensure_buffers` in `motions`).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dst, &stg[w0..w0 + words], st.cu_stream())
            }
            .map_err(drv("copy to device"))?;
        }
        ev[1].record(&st).map_err(drv("event"))?;
        let start_v = self.input.slice(w0..a_diff);
        let diff_v = self.input.slice(a_diff..a_seg);
        let seg_v = self.input.slice(a_seg..a_perm);
        let cn32 = cn as u32;
        let mut out_v = self.out.slice_mut(o0..o0 + 2 * cn);
        if kernel != MotionKernel::Naive {
            // The per-motion flags the item kernels set.
            st.memset_zeros(&mut out_v)
                .map_err(drv("clearing motion flags"))?;
        }
        match kernel {
            MotionKernel::Naive => {
                let mut b = st.launch_builder(&fns.naive);
                b.arg(&self.args)
                    .arg(&start_v)
                    .arg(&diff_v)
                    .arg(&seg_v)
                    .arg(&cn32)
                    .arg(&self.order_off)
                    .arg(&self.order)
                    .arg(&mut out_v);
                unsafe { b.launch(launch_cfg(cn)) }
                    .map_err(drv("launching check_motions_naive"))?;
            }
            MotionKernel::Balanced => {
                let perm_v = self.input.slice(a_perm..a_rank);
                let rank_v = self.input.slice(a_rank..a_scene);
                let n_ranks = (rank_off.len() - 1) as u32;
                let total = rank_off[rank_off.len() - 1];
                let scene_v = self.input.slice(a_scene..a_scene + scene_of.len());
                // Few items: one warp each (not with several scenes).
                let (f, lanes) = match &fns.warp {
                    Some(w) if total as usize <= self.warp_items => (w, 32),
                    _ => (&fns.balanced, 1),
                };
                let mut b = st.launch_builder(f);
                b.arg(&self.args);
                if let Some((_, scenes)) = multi {
                    b.arg(&scenes.ranges).arg(&scenes.bases).arg(&scene_v);
                }
                b.arg(&start_v)
                    .arg(&diff_v)
                    .arg(&seg_v)
                    .arg(&perm_v)
                    .arg(&rank_v)
                    .arg(&n_ranks)
                    .arg(&total)
                    .arg(&self.order_off)
                    .arg(&self.order)
                    .arg(&cn32)
                    .arg(&mut out_v);
                unsafe { b.launch(launch_cfg(total as usize * lanes)) }
                    .map_err(drv("launching check_motions_balanced"))?;
            }
            MotionKernel::Tiled => {
                let perm_v = self.input.slice(a_perm..a_perm + cn);
                let part_v = self.input.slice(a_perm + cn..a_rank);
                let tiles_v = self.input.slice(a_rank..a_scene);
                let n_tiles = ((rank_off.len() - 1) / 3) as u32;
                let total = rank_off[n_tiles as usize];
                let mut b = st.launch_builder(&fns.tiled);
                b.arg(&self.args)
                    .arg(&start_v)
                    .arg(&diff_v)
                    .arg(&seg_v)
                    .arg(&perm_v)
                    .arg(&part_v)
                    .arg(&tiles_v)
                    .arg(&n_tiles)
                    .arg(&total)
                    .arg(&self.order_off)
                    .arg(&self.order)
                    .arg(&cn32)
                    .arg(&mut out_v);
                unsafe { b.launch(launch_cfg(total as usize)) }
                    .map_err(drv("launching check_motions_tiled"))?;
            }
        }
        ev[2].record(&st).map_err(drv("event"))?;
        {
            let host = self.out_host.as_mut_slice().map_err(drv("pinned buffer"))?;
            let src = {
                let (p, _sync) = self.out.device_ptr(&st);
                p + o0 as u64
            };
            // SAFETY: as above; the host range is read only after this piece's last event
            // completed, and not copied into again before (the slots alternate).
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut host[o0..o0 + 2 * cn],
                    src,
                    st.cu_stream(),
                )
            }
            .map_err(drv("copy to host"))?;
        }
        ev[3].record(&st).map_err(drv("event"))?;
        Ok(piece)
    }

    /// Waits for one piece of [`Self::motions`], adds its times and turns its flags into
    /// statuses (`out` indexed from the start of the call's range).
    fn finish_motion_piece(
        &mut self,
        piece: &MotionPiece,
        out: &mut [MotionStatus],
        times: &mut DevTimes,
    ) -> Result<(), CollisionError> {
        let ev = &self.pipe_events[piece.slot * PIPE_EVENTS..(piece.slot + 1) * PIPE_EVENTS];
        ev[3].synchronize().map_err(drv("kernel execution"))?;
        let el = |a: usize, b: usize| -> Result<f64, CollisionError> {
            Ok(ev[a].elapsed_ms(&ev[b]).map_err(drv("event timing"))? as f64)
        };
        times.htod += el(0, 1)?;
        times.kernel += el(1, 2)?;
        times.dtoh += el(2, 3)?;
        times.launches += 1;
        let (cn, o0) = (piece.cn, piece.o0);
        let host = self.out_host.as_slice().map_err(drv("pinned buffer"))?;
        let flags = &host[o0..o0 + 2 * cn];
        for (k, o) in out[piece.first..piece.first + cn].iter_mut().enumerate() {
            let (collides, uncertain) = match piece.kernel {
                MotionKernel::Naive => (flags[k] == 1, flags[k] == 2),
                MotionKernel::Balanced | MotionKernel::Tiled => (flags[k] != 0, flags[cn + k] != 0),
            };
            *o = if collides {
                MotionStatus::Collides
            } else if uncertain {
                MotionStatus::Uncertain
            } else {
                MotionStatus::Valid
            };
        }
        Ok(())
    }
}

/// The motion kernels one call of `DeviceState::motions` may launch.
struct MotionFns {
    naive: CudaFunction,
    balanced: CudaFunction,
    warp: Option<CudaFunction>,
    tiled: CudaFunction,
}

/// One piece of motions in flight through a buffer slot (see `DeviceState::motions`).
struct MotionPiece {
    /// Buffer slot (0 or 1).
    slot: usize,
    /// First motion, counted from the start of the call's range.
    first: usize,
    /// Motions in the piece.
    cn: usize,
    /// The kernel the piece runs.
    kernel: MotionKernel,
    /// First staging / input word of the slot.
    w0: usize,
    /// First output word of the slot.
    o0: usize,
}

/// Motions per piece below which a motion batch is not cut for pipelining.
const MOTION_PIECE_MIN: usize = 1 << 15;

/// Most pieces a motion batch is cut into for pipelining (more when [`MOTION_CHUNK`] or
/// [`ITEM_CHUNK`] require it), unless [`MOTION_PIECES_ENV`] says otherwise.
const MOTION_PIECES: usize = 8;

/// Environment variable: the most pieces a motion batch is cut into for pipelining (default
/// `MOTION_PIECES`; `1` checks a batch in one piece, for side-by-side measurements).
pub const MOTION_PIECES_ENV: &str = "GMP_MOTION_PIECES";

/// Cuts motions with `segments` into the consecutive pieces `DeviceState::motions` checks:
/// about equal counts, at least [`MOTION_PIECE_MIN`] motions each (one piece below twice that),
/// at most `max_pieces` pieces unless a piece would exceed [`MOTION_CHUNK`] motions or
/// [`ITEM_CHUNK`] interpolated configurations (a single motion longer than that is one piece).
fn motion_pieces(segments: &[u32], max_pieces: usize) -> Vec<std::ops::Range<usize>> {
    let n = segments.len();
    let count = (n / MOTION_PIECE_MIN).clamp(1, max_pieces.max(1));
    let target = n.div_ceil(count).clamp(1, MOTION_CHUNK);
    let mut pieces = Vec::with_capacity(count);
    let mut i = 0;
    while i < n {
        let mut j = i;
        let mut items = 0u64;
        while j < n && j - i < target {
            let len = u64::from(segments[j]) + 1;
            if j > i && items + len > ITEM_CHUNK {
                break;
            }
            items += len;
            j += 1;
        }
        pieces.push(i..j);
        i = j;
    }
    pieces
}

/// An upper bound on the staging words of a piece of motions with `segments` (`dof` joints):
/// start, diff, segments, the sorted order and tile offsets, the rank or tile table, a scene
/// per motion.
fn motion_words_bound(segments: &[u32], dof: usize) -> usize {
    let cn = segments.len();
    let max_len = segments.iter().max().map_or(0, |&s| s as usize + 1);
    2 * cn * dof + 4 * cn + max_len + 3 * max_len.div_ceil(MOTION_TILE as usize) + 4
}

/// Environment variable: `0` turns off the rounding of pipelined configuration pieces to whole
/// waves of the device (see `pipeline_shape`; for side-by-side measurements).
pub const WHOLE_WAVES_ENV: &str = "GMP_WHOLE_WAVES";

/// Environment variable: the smallest batch (or pipelined piece) of configurations that a
/// specialised module with an f16-slot pass checks with it (`check_configs_half`, then
/// `check_configs_rest`); smaller ones, and every batch when it is `off`, run the exact
/// `check_configs` alone. Default: [`HALF_MIN_WAVES`] waves of the device (a wave: the
/// configurations it runs at once).
pub const HALF_MIN_ENV: &str = "GMP_HALF_MIN";

/// Default of [`HALF_MIN_ENV`] in device waves. Measured on the H100 (MBM Panda sphere model,
/// all seven scenes): in 2026-11-23 (results/collision/half_slots_H100_2026-11-23/tri_state/),
/// when the exact pass over the queue ran after the f16 pass on the kernel stream, pieces of
/// 1.5 waves were 7-16 % slower with the f16 pass, so it started at four waves. Since the
/// exact pass runs beside the next piece (results/collision/half_from_one_wave_2026-11-26/),
/// the f16 pass from one wave made 1e6 batches 3-10 % faster end to end with f32 input and
/// 2e6 batches 4-18 %, on all seven scenes, two runs each.
pub const HALF_MIN_WAVES: usize = 1;

/// Default of [`HALF_MIN_ENV`] in device waves for a batch checked in one piece (below twice
/// the smallest pipelined piece), where the exact pass can only follow the f16 pass: the
/// threshold measured in 2026-11-23 (see [`HALF_MIN_WAVES`]). On the H100's Panda kernels one
/// piece never reaches it, so such batches run the exact kernel alone, as before.
pub const HALF_MIN_ONE_PIECE_WAVES: usize = 4;

/// The batch size from which the f16-slot pass runs ([`HALF_MIN_ENV`]; `wave` as in
/// [`KernelSet::config_wave`]).
fn half_min(wave: usize) -> usize {
    batch_min(HALF_MIN_ENV, wave)
}

/// Environment variable: the smallest configuration batch for which a checker builds the
/// scene's proximity grid ([`crate::collision::prox::ProxGrid`]) for the specialised kernels,
/// when it has none for the current scene (`off`: never; default [`PROX_MIN_DEFAULT`]); a
/// motion batch counts the configurations of its motions. Once built, every configuration and
/// motion batch reads it until the scene changes (the motion checks of an f16-pass build while
/// the growths of the loop's first tests are at most `specialise::PROX_EH_MAX`).
pub const PROX_MIN_ENV: &str = "GMP_PROX_MIN";

/// Default of [`PROX_MIN_ENV`]. Building takes a few milliseconds of host time once per scene
/// (5 ms for bookshelf_thin on two cores, `ProxGrid::build`), about the kernel time of a few
/// million configurations, and every later batch of the scene gains from it.
pub const PROX_MIN_DEFAULT: usize = 1 << 18;

/// Cell size of the proximity grid (metres): 3 cm. The grids of the MBM scenes are then at most
/// 1.8 MB, and build in 4-16 ms on two cores; 2 cm cells took three times longer (12-49 ms).
/// Whether finer cells would leave out more tests in the kernels was not measured.
pub const PROX_CELL: f64 = 0.03;

/// A smallest batch size from environment variable `var`: `off` (never), a number, or
/// `default` when unset or unreadable; at least 1.
fn batch_min(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(v) if v.trim() == "off" => usize::MAX,
        Ok(v) => v.trim().parse().unwrap_or(default),
        Err(_) => default,
    }
    .max(1)
}

/// Environment variable: the smallest batch (or pipelined piece) of configurations checked in
/// warp-coherent order (`sort_keys` in `kernels/collision.cu`: sorted on the device by a coarse
/// grid cell in joint space, [`CellKey`], so that a warp's configurations need mostly the same
/// tests); `off` checks every batch in the caller's order. Default: [`SORT_MIN_WAVES`] waves of
/// the device ([`crate::collision::coherent::MIN_ENV`]).
pub const SORT_MIN_ENV: &str = crate::collision::coherent::MIN_ENV;

/// Default of [`SORT_MIN_ENV`] in device waves.
pub const SORT_MIN_WAVES: usize = 1;

/// Cells of the warp-coherent order's counting sort (`GMP_SORT_BINS` of the kernels).
const SORT_BINS: usize = 1 << 16;

/// Blocks of `sort_scan`, one per tile of cells (`GMP_SORT_TILES`).
const SORT_TILES: usize = SORT_BINS / 1024;

/// Threads per block of `sort_scan` (`GMP_SORT_SCAN_THREADS`: four cells each).
const SORT_SCAN_THREADS: u32 = 256;

/// Words of the sort's cell buffer: the cells, then `sort_scan`'s tile counter and the tiles'
/// totals (all zeroed before each sort).
const SORT_HIST_WORDS: usize = SORT_BINS + 1 + SORT_TILES;

/// The batch size from which configurations are checked in warp-coherent order
/// ([`SORT_MIN_ENV`]; `wave` in configurations).
fn sort_min(wave: usize) -> usize {
    batch_min(SORT_MIN_ENV, wave)
}

/// The key of the warp-coherent order for `space` ([`CellKey::even`]), as the words
/// `sort_keys` reads: per joint its lower limit and cells per unit (f32 bits), then its bits.
pub fn sort_spec(space: &JointSpace) -> Vec<u32> {
    CellKey::even(space).words()
}

/// Environment variable: the key bits of the warp-coherent order per joint, comma-separated
/// (e.g. `4,3,3,3,3,0,0`; see [`CellKey::with_bits`]), in place of the even share (for
/// measurements of other keys; read when a checker is built).
pub const SORT_BITS_ENV: &str = "GMP_SORT_BITS";

/// The key a checker built now sorts by: [`CellKey::even`], or the bits of [`SORT_BITS_ENV`]
/// (a line on stderr says why they are not used when they are not valid).
pub fn checker_cell_key(space: &JointSpace) -> CellKey {
    let Ok(v) = std::env::var(SORT_BITS_ENV) else {
        return CellKey::even(space);
    };
    let key = v
        .split(',')
        .map(|b| {
            b.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{b}' is not a number"))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|bits| CellKey::with_bits(space, &bits));
    key.unwrap_or_else(|e| {
        eprintln!("gmp: {SORT_BITS_ENV}='{v}' ignored: {e}");
        CellKey::even(space)
    })
}

/// [`launch_configs`] in warp-coherent order: `sort_keys`, `sort_scan` and `sort_place` write
/// the order of the configurations `input` of `inbuf` by their [`sort_spec`] cell into `bufs`,
/// and the check kernels take it as their order (each thread reads its configuration's row where
/// it is and writes its verdict to that configuration's byte of `out`). The same verdicts as
/// [`launch_configs`]; only which thread checks which configuration changes.
fn launch_sorted(
    stream: &Arc<CudaStream>,
    (fns, bufs, dof): (&[CudaFunction; 3], &mut SortBufs, usize),
    check: (&CudaFunction, usize),
    args: &ModelArgs,
    (inbuf, input): (&CudaSlice<u32>, std::ops::Range<usize>),
    output: (&mut CudaSlice<u8>, std::ops::Range<usize>),
    half: Option<HalfLaunch>,
) -> Result<(), CollisionError> {
    let n = output.1.len();
    let (n32, dof32) = (n as u32, dof as u32);
    {
        let iv = inbuf.slice(input.clone());
        stream
            .memset_zeros(&mut bufs.hist)
            .map_err(drv("clearing the sort cells"))?;
        let mut b = stream.launch_builder(&fns[0]);
        b.arg(&iv)
            .arg(&n32)
            .arg(&dof32)
            .arg(&bufs.spec)
            .arg(&mut bufs.keys)
            .arg(&mut bufs.ranks)
            .arg(&mut bufs.hist);
        unsafe { b.launch(launch_cfg(n)) }.map_err(drv("launching sort_keys"))?;
        let mut b = stream.launch_builder(&fns[1]);
        b.arg(&mut bufs.hist);
        let scan = LaunchConfig {
            grid_dim: (SORT_TILES as u32, 1, 1),
            block_dim: (SORT_SCAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(scan) }.map_err(drv("launching sort_scan"))?;
        let mut b = stream.launch_builder(&fns[2]);
        b.arg(&n32)
            .arg(&bufs.keys)
            .arg(&bufs.ranks)
            .arg(&bufs.hist)
            .arg(&mut bufs.order);
        unsafe { b.launch(launch_cfg(n)) }.map_err(drv("launching sort_place"))?;
    }
    launch_configs(
        stream,
        check,
        args,
        (inbuf, input),
        output,
        half,
        Some(&bufs.order),
    )
}

/// Whether a specialised translation unit has the f16-slot pass and its kernels
/// ([`specialise::Layout::LoopedHalf`] on a model that allows it).
fn has_half_pass(source: &str) -> bool {
    source.contains("#define GMP_CONFIG_HALF")
}

/// The f16-slot pass of one [`launch_configs`]: its two kernels, the queue they share (at
/// least one word more than the configurations) and the threads of the exact pass over the
/// queue (a grid-stride loop).
struct HalfLaunch<'a> {
    kernels: &'a (CudaFunction, CudaFunction),
    queue: &'a mut CudaSlice<u32>,
    rest_threads: usize,
    /// Leave `check_configs_rest` to the caller (it launches it on another stream with
    /// [`launch_rest`]).
    defer_rest: bool,
}

/// Enqueues `check_configs_rest` (`f`) on `stream`: the exact verdicts of the configurations the
/// f16 pass queued in `queue`, rows in words `input` of `inbuf`, verdicts into bytes `out` of
/// `outbuf`, on a grid-stride loop of `threads` threads (at most `n`).
fn launch_rest(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    args: &ModelArgs,
    (inbuf, input): (&CudaSlice<u32>, std::ops::Range<usize>),
    (outbuf, out): (&mut CudaSlice<u8>, std::ops::Range<usize>),
    queue: &CudaSlice<u32>,
    threads: usize,
) -> Result<(), CollisionError> {
    let n = out.len();
    let iv = inbuf.slice(input);
    let mut ov = outbuf.slice_mut(out);
    let mut b = stream.launch_builder(f);
    b.arg(args).arg(&iv).arg(&mut ov).arg(queue);
    unsafe { b.launch(launch_cfg(threads.clamp(1, n.max(1)))) }
        .map_err(drv("launching check_configs_rest"))?;
    Ok(())
}

/// Enqueues `check_configs` or `check_configs_warp` (`f`, with `lanes` threads per
/// configuration) on `stream` over words `input` of `inbuf` and bytes `out` of `outbuf` (one
/// per configuration); with `half`, the f16-slot pass in its place: the queue's count zeroed,
/// `check_configs_half`, then `check_configs_rest` on what it left undecided. `order`: the
/// order to check the configurations in ([`launch_sorted`]; `check_configs` and
/// `check_configs_half` only), else their own.
fn launch_configs(
    stream: &Arc<CudaStream>,
    (f, lanes): (&CudaFunction, usize),
    args: &ModelArgs,
    (inbuf, input): (&CudaSlice<u32>, std::ops::Range<usize>),
    (outbuf, out): (&mut CudaSlice<u8>, std::ops::Range<usize>),
    half: Option<HalfLaunch>,
    order: Option<&CudaSlice<u32>>,
) -> Result<(), CollisionError> {
    let n = out.len();
    let cn32 = n as u32;
    // A null order pointer: each thread checks its own configuration.
    let no_order = 0u64;
    if let Some(h) = half {
        {
            let mut count = h.queue.slice_mut(0..1);
            stream
                .memset_zeros(&mut count)
                .map_err(drv("clearing the f16 pass queue"))?;
        }
        {
            let iv = inbuf.slice(input.clone());
            let mut ov = outbuf.slice_mut(out.clone());
            let mut b = stream.launch_builder(&h.kernels.0);
            b.arg(args)
                .arg(&iv)
                .arg(&cn32)
                .arg(&mut ov)
                .arg(&mut *h.queue);
            match order {
                Some(o) => b.arg(o),
                None => b.arg(&no_order),
            };
            unsafe { b.launch(launch_cfg(n)) }.map_err(drv("launching check_configs_half"))?;
        }
        if !h.defer_rest {
            launch_rest(
                stream,
                &h.kernels.1,
                args,
                (inbuf, input),
                (outbuf, out),
                h.queue,
                h.rest_threads,
            )?;
        }
        return Ok(());
    }
    let iv = inbuf.slice(input);
    let mut ov = outbuf.slice_mut(out);
    let mut b = stream.launch_builder(f);
    b.arg(args).arg(&iv).arg(&cn32).arg(&mut ov);
    if lanes == 1 {
        // check_configs (check_configs_warp has no order argument).
        match order {
            Some(o) => b.arg(o),
            None => b.arg(&no_order),
        };
    }
    unsafe { b.launch(launch_cfg(n * lanes)) }.map_err(drv("launching check_configs"))?;
    Ok(())
}

/// Environment variable: the largest batch (configurations, or (motion, step) items of the
/// balanced motion kernel) checked with one warp per item; `0` turns the warp kernels off.
pub const WARP_ITEMS_ENV: &str = "GMP_WARP_ITEMS";

/// Default of [`WARP_ITEMS_ENV`] for models with polytope bodies. Sphere models default to
/// 0: their specialised single-thread kernels are short enough that a warp per item made MBM
/// planning slower (H200, 2026-11-22: Panda median 2.1 ms without, 3.0 ms with; polytopes
/// 4.9 ms without, 4.2 ms with; `results/collision/README.md`, session 8).
pub const WARP_ITEMS: usize = 2048;

/// The largest batch checked with one warp per item for `model` ([`WARP_ITEMS_ENV`], else
/// [`WARP_ITEMS`] for polytope models and 0 for sphere models).
fn warp_items(model: &CollisionModel) -> usize {
    std::env::var(WARP_ITEMS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(if model.bodies.iter().any(|b| b.vert_count != 1) {
            WARP_ITEMS
        } else {
            0
        })
}

/// Environment variable: `0` sends single-piece configuration batches through the pipelined
/// path (copy streams and cross-stream events) instead of one round on the kernel stream (for
/// side-by-side latency measurements).
pub const SMALL_ROUND_ENV: &str = "GMP_SMALL_ROUND";

/// Pipeline slots of the configuration checks (pieces in flight at once).
const PIPE_SLOTS: usize = 4;

/// Events per pipeline slot of [`DeviceState::configs`]: copy in, kernels (kernel stream),
/// copy out, the exact pass (rest stream), each start and end; then the f16 pass done (kernel
/// stream), which the rest stream waits for.
const PIPE_EVENTS: usize = 9;

/// The total length of the union of `intervals` (start, end), in their unit; sorts them.
fn union_ms(intervals: &mut [(f64, f64)]) -> f64 {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut open: Option<(f64, f64)> = None;
    for &(a, b) in intervals.iter() {
        let b = b.max(a);
        open = match open {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((s, e)) = open {
        total += e - s;
    }
    total
}
/// Smallest pipelined piece: below twice this a batch goes in one piece.
const MIN_PIECE: usize = 1 << 18;

/// `(piece, slots)` for a batch of `n` configurations: one piece for small batches, else about
/// four pieces of at least [`MIN_PIECE`] and at most a quarter of [`CONFIG_CHUNK`], in a ring
/// of up to [`PIPE_SLOTS`] buffer slots. With `wave` (the configurations the device runs at
/// once: one thread each, as many blocks as fit on every SM; 0: unknown) a piece is rounded to
/// the nearest whole number of waves that stays within those bounds, so that a launch does not
/// end with a part-empty wave of blocks (a piece of 1.55 waves takes as long as two).
fn pipeline_shape(n: usize, wave: usize) -> (usize, usize) {
    if n < 2 * MIN_PIECE {
        return (n.max(1), 1);
    }
    let (lo, hi) = (MIN_PIECE, CONFIG_CHUNK / PIPE_SLOTS);
    let mut piece = n.div_ceil(4).clamp(lo, hi);
    if wave > 0 && wave <= hi {
        // Whole waves, nearest to the piece above, at most half the batch (two pieces at least,
        // so that copies and kernels still overlap) and at most `hi`.
        let most = hi.min(n / 2) / wave;
        piece = if most >= 1 {
            ((piece + wave / 2) / wave).clamp(1, most) * wave
        } else {
            n.div_ceil(2)
        };
    }
    (piece, n.div_ceil(piece).min(PIPE_SLOTS))
}

/// A transform from the 12 words `fk_frames` writes per frame (row-major rotation, translation).
fn xf_of_words(w: &[u32]) -> Xf {
    let f = |k: usize| f32::from_bits(w.get(k).copied().unwrap_or(0));
    Xf {
        r: [f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8)],
        t: [f(9), f(10), f(11)],
    }
}

fn launch_cfg(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The rank-major item layout of the balanced kernel: `perm` lists the motions longest first
/// (stable counting sort), `rank_off[r]` is the first item of rank `r` (the number of motions
/// with more than `r'` steps, summed over `r' < r`); `rank_off` has `max steps + 1` entries.
fn rank_major(segments: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let max_len = segments.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
    let mut hist = vec![0u32; max_len + 1];
    for &n in segments {
        hist[n as usize + 1] += 1;
    }
    // Stable counting sort, longest first: slot of length L starts after all longer ones.
    let mut start = vec![0u32; max_len + 2];
    for len in (1..=max_len).rev() {
        start[len - 1] = start[len] + hist[len];
    }
    // start[len - 1] = number of motions with length >= len; turn into "first slot of len".
    let mut next: Vec<u32> = (0..=max_len).map(|len| start[len]).collect();
    let mut perm = vec![0u32; segments.len()];
    for (i, &n) in segments.iter().enumerate() {
        let len = n as usize + 1;
        perm[next[len] as usize] = i as u32;
        next[len] += 1;
    }
    // count_r = motions with length > r = start[r].
    let mut rank_off = Vec::with_capacity(max_len + 1);
    let mut acc = 0u32;
    rank_off.push(0);
    for &count in start.iter().take(max_len) {
        acc += count;
        rank_off.push(acc);
    }
    (perm, rank_off)
}

/// Ranks per tile of the tiled motion kernel (`GMP_MOTION_TILE` in `kernels/collision.cu`).
const MOTION_TILE: u32 = 32;

/// The item layout of the tiled motion kernel (`check_motions_tiled`): `perm` as
/// [`rank_major`]'s (longest first), `part_off[k]` the first item of sorted motion `k` among the
/// motions that end inside a tile (counted from the end of the tile's full motions), and
/// `tiles`: the first item of each tile and the total (`n_tiles + 1` values, each tile padded
/// to a multiple of 32 items), then per tile the number of sorted motions that fill it, then
/// the number that reach into it.
fn tiled_layout(segments: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let (perm, _) = rank_major(segments);
    let len = |k: usize| u64::from(segments[perm[k] as usize]) + 1;
    let t = u64::from(MOTION_TILE);
    let max_len = if perm.is_empty() { 0 } else { len(0) };
    let n_tiles = max_len.div_ceil(t) as usize;
    let mut part_off = vec![0u32; perm.len()];
    let (mut offs, mut fulls, mut alives) = (vec![0u32], Vec::new(), Vec::new());
    let mut total = 0u64;
    for b in 0..n_tiles as u64 {
        // Sorted longest first: the motions filling tile b, then those ending in it, are
        // prefixes.
        let full = perm.partition_point(|&m| u64::from(segments[m as usize]) + 1 >= t * (b + 1));
        let alive = perm.partition_point(|&m| u64::from(segments[m as usize]) + 1 > t * b);
        let mut items = t * full as u64;
        let mut part = 0u64;
        for (k, off) in part_off.iter_mut().enumerate().take(alive).skip(full) {
            *off = part as u32;
            part += len(k) - t * b;
        }
        items += part;
        total += items.div_ceil(32) * 32;
        offs.push(total as u32);
        fulls.push(full as u32);
        alives.push(alive as u32);
    }
    offs.extend(fulls);
    offs.extend(alives);
    (perm, part_off, offs)
}

/// The CUDA [`Checker`]. Verdicts are identical to [`crate::collision::CpuChecker`]'s.
pub struct CudaChecker {
    model: CollisionModel,
    scene: SceneModel,
    space: JointSpace,
    devices: Vec<Mutex<DeviceState>>,
    names: Vec<String>,
    order: Mutex<Arc<OrderTable>>,
    motion_kernel: MotionKernel,
    variant: KernelVariant,
    /// What the specialised kernels contain, when every device has them.
    spec_stats: Option<specialise::SpecialiseStats>,
    /// Why the specialised kernels do not run, when they do not.
    spec_unavailable: Option<String>,
    timings: Mutex<GpuTimings>,
    /// Small configuration batches of concurrent callers, combined into one launch
    /// ([`COMBINE_MAX_ITEMS`]).
    config_combiner: Combiner<Vec<f32>, Vec<bool>>,
    /// Small motion rounds of concurrent callers, combined into one launch.
    motion_combiner: Combiner<PreparedMotions, Vec<MotionStatus>>,
    /// [`COMBINE_ENV`] was not `0` when the checker was built.
    combine: bool,
    /// Link and obstacle names for [`Checker::contacts`] (computed on the host by the CPU
    /// reference's tests, whose verdicts the kernels reproduce).
    contact_names: ContactNames,
}

/// Batches of at most this many configurations or motions from callers on several threads
/// (parallel planning attempts, concurrent service calls) share launches: the requests that
/// queue while a launch runs go out together in the next one ([`Combiner`]), each item checked
/// as in a batch of its own. Larger batches fill a launch on their own and go straight to the
/// device (copying them into a combined batch would cost more than it saves).
pub const COMBINE_MAX_ITEMS: usize = 4096;

/// Environment variable: `0` turns off the combining of concurrent callers' small batches
/// ([`COMBINE_MAX_ITEMS`]; for side-by-side measurements), read when a checker is built.
pub const COMBINE_ENV: &str = "GMP_COMBINE";

impl std::fmt::Debug for CudaChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaChecker")
            .field("devices", &self.names)
            .field("motion_kernel", &self.motion_kernel)
            .field("variant", &self.variant)
            .finish()
    }
}

impl CudaChecker {
    /// Builds a checker on every visible device (like [`crate::collision::CpuChecker::new`]),
    /// its kernels chosen by [`CudaOptions::from_env`]. Fails with a clear message when no GPU is
    /// usable.
    pub fn new(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        scene: &Scene,
        opts: CheckerOptions,
    ) -> Result<Self, CollisionError> {
        Self::with_options(
            robot,
            group,
            base_state,
            scene,
            opts,
            CudaOptions::from_env(),
        )
    }

    /// [`Self::new`] with explicit kernel options.
    pub fn with_options(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        scene: &Scene,
        opts: CheckerOptions,
        cuda: CudaOptions,
    ) -> Result<Self, CollisionError> {
        let n = device_count();
        if n == 0 {
            return Err(backend_err(
                "no CUDA device found (libcuda missing or no GPU visible)",
            ));
        }
        Self::on_devices(
            robot,
            group,
            base_state,
            scene,
            opts,
            &(0..n).collect::<Vec<_>>(),
            cuda,
        )
    }

    /// Builds a checker on the given device ordinals (a batch is split evenly over them), its
    /// kernels chosen by `cuda`.
    pub fn on_devices(
        robot: &RobotModel,
        group: &PlanningGroup,
        base_state: &[f64],
        scene: &Scene,
        opts: CheckerOptions,
        devices: &[usize],
        cuda: CudaOptions,
    ) -> Result<Self, CollisionError> {
        if devices.is_empty() {
            return Err(backend_err("no CUDA device selected"));
        }
        let model = CollisionModel::build(robot, group, base_state, opts.shapes, opts.margin)
            .map_err(backend_err)?;
        within_kernel_limits(&model)?;
        let contact_names = ContactNames::new(robot, &model, scene);
        let scene_model = SceneModel::build(scene);
        let t0 = Instant::now();
        let maxrreg = cuda.spec_maxrreg;
        let generated = specialised_source(&model, &cuda);
        let mut spec_unavailable = generated.as_ref().err().cloned();
        let sort_words = checker_cell_key(&group.space).words();
        let mut states = Vec::new();
        let mut names = Vec::new();
        for &d in devices {
            let spec = generated
                .as_ref()
                .ok()
                .map(|g| (g.source.as_str(), maxrreg));
            let (mut state, err) =
                DeviceState::new(d, &model, &scene_model, spec, &sort_words, true)?;
            if let Some(e) = err {
                spec_unavailable.get_or_insert(e);
            }
            state.prox_reach = generated.as_ref().ok().and_then(|g| g.prox_reach);
            states.push(Mutex::new(state));
            names.push(device_module(d)?.name.clone());
        }
        let spec_stats = match (&generated, &spec_unavailable) {
            (Ok(g), None) => Some(g.stats.clone()),
            _ => None,
        };
        let variant = if spec_stats.is_some() {
            KernelVariant::Specialised
        } else {
            KernelVariant::Generic
        };
        let resources = states
            .first()
            .and_then(|s| lock(s).spec.as_ref().map(KernelSet::resources))
            .unwrap_or_default();
        match (&spec_stats, &spec_unavailable) {
            (Some(st), _) => eprintln!(
                "gmp: cuda collision kernels: specialised ({} joints, {} frames, {} bodies, {} self \
                 pairs; {} layout, {} KiB generated; generated and compiled in {:.0} ms{}; {resources})",
                st.dof,
                st.frames,
                st.bodies,
                st.self_pairs,
                st.layout,
                st.generated_bytes / 1024,
                t0.elapsed().as_secs_f64() * 1e3,
                maxrreg.map_or(String::new(), |r| format!(", at most {r} registers"))
            ),
            (None, Some(why)) => eprintln!(
                "gmp: cuda collision kernels: generic (no specialised kernels: {})",
                why.lines().next().unwrap_or("")
            ),
            (None, None) => {}
        }
        Ok(Self {
            model,
            scene: scene_model,
            space: group.space.clone(),
            devices: states,
            names,
            order: Mutex::new(Arc::new(OrderTable::default())),
            motion_kernel: MotionKernel::DEFAULT,
            variant,
            spec_stats,
            spec_unavailable,
            timings: Mutex::new(GpuTimings::default()),
            config_combiner: Combiner::new(),
            motion_combiner: Combiner::new(),
            combine: std::env::var(COMBINE_ENV).map_or(true, |v| v.trim() != "0"),
            contact_names,
        })
    }

    /// Requests answered and launches run by the combining of concurrent callers' small
    /// batches so far ([`COMBINE_MAX_ITEMS`]): configurations, then motion rounds.
    pub fn combine_stats(&self) -> (CombineStats, CombineStats) {
        (self.config_combiner.stats(), self.motion_combiner.stats())
    }

    /// Whether a batch of `values` words goes through [`Self::config_combiner`]: combining on,
    /// whole rows, at most [`COMBINE_MAX_ITEMS`] configurations.
    fn combines_configs(&self, values: usize) -> bool {
        let dof = self.model.dof();
        self.combine && dof > 0 && values.is_multiple_of(dof) && values <= COMBINE_MAX_ITEMS * dof
    }

    /// Finite f32 configurations (whole rows) through [`Self::config_combiner`].
    fn configs_combined(&self, values: Vec<f32>) -> Result<Vec<bool>, CollisionError> {
        let dof = self.model.dof().max(1);
        self.config_combiner.run(values, |reqs| {
            let verdicts = self.configs_from(ConfigValues::F32(&reqs.concat()))?;
            split_answers(verdicts, reqs.iter().map(|r| r.len() / dof))
        })
    }

    /// One round of motion checks with the checker's motion kernel: small rounds through
    /// [`Self::motion_combiner`], others straight to the device.
    fn prepared_combined(&self, p: &PreparedMotions) -> Result<Vec<MotionStatus>, CollisionError> {
        let n = p.segments.len();
        if !self.combine || n == 0 || n > COMBINE_MAX_ITEMS {
            return self.check_prepared(p, self.motion_kernel);
        }
        self.motion_combiner.run(p.clone(), |reqs| {
            let mut all = PreparedMotions::default();
            for r in &reqs {
                all.start.extend_from_slice(&r.start);
                all.diff.extend_from_slice(&r.diff);
                all.segments.extend_from_slice(&r.segments);
            }
            let statuses = self.check_prepared(&all, self.motion_kernel)?;
            split_answers(statuses, reqs.iter().map(|r| r.segments.len()))
        })
    }

    /// The collision kernels the checks run on.
    pub fn kernel_variant(&self) -> KernelVariant {
        self.variant
    }

    /// Chooses the collision kernels (both give the same verdicts). Fails when the specialised
    /// kernels are asked for but could not be generated or compiled.
    pub fn set_kernel_variant(&mut self, v: KernelVariant) -> Result<(), CollisionError> {
        if v == KernelVariant::Specialised && self.spec_stats.is_none() {
            return Err(backend_err(format!(
                "no specialised collision kernels for this robot: {}",
                self.spec_unavailable.as_deref().unwrap_or("unknown reason")
            )));
        }
        self.variant = v;
        Ok(())
    }

    /// What the specialised kernels contain, or `None` when they are not available.
    pub fn specialisation(&self) -> Option<&specialise::SpecialiseStats> {
        self.spec_stats.as_ref()
    }

    /// Why the specialised kernels are not available (`None` when they are).
    pub fn specialisation_unavailable(&self) -> Option<&str> {
        self.spec_unavailable.as_deref()
    }

    /// The proximity grid the first device's configuration and motion kernels read now, when
    /// they read one ([`PROX_MIN_ENV`]): without its cells, which are on the device.
    pub fn proximity_grid(&self) -> Option<ProxGrid> {
        let st = lock(self.devices.first()?);
        match (&st.scene.prox, st.scene.prox_stale) {
            (Some(p), false) => Some(p.grid.clone()),
            _ => None,
        }
    }

    /// Names of the devices this checker runs on.
    pub fn device_names(&self) -> &[String] {
        &self.names
    }

    /// The compiled robot model (identical to the CPU backend's).
    pub fn model(&self) -> &CollisionModel {
        &self.model
    }

    /// The compiled scene (identical to the CPU backend's).
    pub fn scene_model(&self) -> &SceneModel {
        &self.scene
    }

    /// The kernel used by [`Checker::check_motions`].
    pub fn motion_kernel(&self) -> MotionKernel {
        self.motion_kernel
    }

    /// Chooses the motion kernel (both give the same verdicts).
    pub fn set_motion_kernel(&mut self, k: MotionKernel) {
        self.motion_kernel = k;
    }

    /// Timings of the last query.
    pub fn last_timings(&self) -> GpuTimings {
        *lock(&self.timings)
    }

    /// Brings the obstacles up to date with `scene`: only changed slots are uploaded, and the
    /// mesh pool only when it changed. Returns the rewritten slots.
    pub fn sync_scene(&mut self, scene: &Scene) -> Result<Vec<usize>, CollisionError> {
        let changed = self.scene.sync(scene);
        self.contact_names.sync(scene);
        if changed.is_empty() {
            return Ok(changed);
        }
        for d in &mut self.devices {
            d.get_mut().unwrap_or_else(|p| p.into_inner()).sync_scene(
                &self.model,
                &self.scene,
                &changed,
            )?;
        }
        Ok(changed)
    }

    /// Replaces the full state that supplies the joints outside the group.
    pub fn set_base_state(&mut self, base_state: &[f64]) -> Result<(), CollisionError> {
        self.model.set_base_state(base_state)?;
        for d in &mut self.devices {
            d.get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .set_base_state(&self.model.base_state)?;
        }
        Ok(())
    }

    /// Splits `0..n` evenly over the devices and runs `f(device, range, out)` on each in its own
    /// thread; returns the concatenated results.
    fn split<T, F>(&self, n: usize, f: F) -> Result<Vec<T>, CollisionError>
    where
        T: Clone + Default + Send,
        F: Fn(
                &mut DeviceState,
                std::ops::Range<usize>,
                &mut [T],
                &mut DevTimes,
            ) -> Result<(), CollisionError>
            + Sync,
    {
        self.split_rows(n, 1, T::default(), f)
    }

    /// [`Self::split`] with `stride` results per item (`out` of `f` holds `stride` values per
    /// item of its range), initialised to `fill`.
    fn split_rows<T, F>(
        &self,
        n: usize,
        stride: usize,
        fill: T,
        f: F,
    ) -> Result<Vec<T>, CollisionError>
    where
        T: Clone + Send,
        F: Fn(
                &mut DeviceState,
                std::ops::Range<usize>,
                &mut [T],
                &mut DevTimes,
            ) -> Result<(), CollisionError>
            + Sync,
    {
        let t0 = Instant::now();
        let mut out = vec![fill; n * stride];
        let nd = self.devices.len().min(n.max(1));
        let per = n.div_ceil(nd).max(1);
        let mut results: Vec<Result<DevTimes, CollisionError>> = Vec::new();
        if nd == 1 || stride == 0 {
            let mut t = DevTimes::default();
            let r = f(&mut lock(&self.devices[0]), 0..n, &mut out, &mut t);
            results.push(r.map(|_| t));
        } else {
            std::thread::scope(|sc| {
                let handles: Vec<_> = out
                    .chunks_mut(per * stride)
                    .enumerate()
                    .map(|(k, part)| {
                        let f = &f;
                        let dev = &self.devices[k];
                        sc.spawn(move || {
                            let mut t = DevTimes::default();
                            let lo = k * per;
                            let rows = part.len() / stride;
                            let r = f(&mut lock(dev), lo..lo + rows, part, &mut t);
                            r.map(|_| t)
                        })
                    })
                    .collect();
                for h in handles {
                    results.push(
                        h.join()
                            .unwrap_or_else(|_| Err(backend_err("a device worker panicked"))),
                    );
                }
            });
        }
        let mut agg = GpuTimings::default();
        for r in results {
            let t = r?;
            agg.stage_ms = agg.stage_ms.max(t.stage);
            agg.htod_ms = agg.htod_ms.max(t.htod);
            agg.kernel_ms = agg.kernel_ms.max(t.kernel);
            agg.dtoh_ms = agg.dtoh_ms.max(t.dtoh);
            agg.launches += t.launches;
        }
        agg.wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        *lock(&self.timings) = agg;
        Ok(out)
    }

    /// Validity of configurations already in f32 (row-major, `dof` values each).
    pub fn check_configs_f32(&self, values: &[f32]) -> Result<Vec<bool>, CollisionError> {
        if self.combines_configs(values.len()) {
            return self.configs_combined(values.to_vec());
        }
        self.configs_from(ConfigValues::F32(values))
    }

    /// Validity of row-major configurations, staged straight into each device's pinned buffer.
    fn configs_from(&self, values: ConfigValues) -> Result<Vec<bool>, CollisionError> {
        let dof = self.model.dof();
        if dof == 0 || !values.len().is_multiple_of(dof) {
            return Err(CollisionError::WrongDof {
                expected: dof,
                got: values.len(),
            });
        }
        let n = values.len() / dof;
        if n == 0 {
            return Ok(Vec::new());
        }
        let variant = self.variant;
        let names = &self.space.names;
        self.split(n, |dev, range, out, t| {
            let rows = Rows {
                dof,
                first: range.start,
                names,
            };
            let part = values.slice(range.start * dof..range.end * dof);
            dev.configs(part, rows, variant, out, t)
        })
    }

    /// World poses of the moving frames at each of the configurations `configs` (f32,
    /// row-major, [`JointSpace::dof`] group values each; the joints outside the group come from
    /// the base state): `configs.len() / dof * model().frames.len()` transforms, the frames of a
    /// configuration contiguous and in the order of [`CollisionModel::frames`] (a body of frame
    /// `f` is placed by pose `f`; frame `-1`, the root, is the identity).
    ///
    /// Bit for bit what [`crate::collision::frame_poses`] gives for the same f32 state (the
    /// `fk_frames` kernel runs `gmp_fk`, the collision kernels' forward kinematics, built without
    /// fused multiply-add). Large batches run in rounds of a few hundred thousand configurations
    /// and are split over the devices. Non-finite values are not rejected: they give non-finite
    /// poses, as on the CPU.
    pub fn forward_kinematics(&self, configs: &[f32]) -> Result<Vec<Xf>, CollisionError> {
        let dof = self.model.dof();
        if dof == 0 || !configs.len().is_multiple_of(dof) {
            return Err(CollisionError::WrongDof {
                expected: dof,
                got: configs.len(),
            });
        }
        let n = configs.len() / dof;
        let nf = self.model.frames.len();
        if n == 0 || nf == 0 {
            return Ok(Vec::new());
        }
        self.split_rows(n, nf, Xf::IDENTITY, |dev, range, out, t| {
            dev.frames(&configs[range.start * dof..range.end * dof], out, t)
        })
    }

    /// Status of prepared motions with the given kernel (one round, no refinement; see
    /// [`crate::collision::refine_motions`]).
    pub fn check_prepared(
        &self,
        p: &PreparedMotions,
        kernel: MotionKernel,
    ) -> Result<Vec<MotionStatus>, CollisionError> {
        let n = p.segments.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let dof = self.model.dof();
        if p.start.len() != n * dof || p.diff.len() != n * dof {
            return Err(CollisionError::WrongDof {
                expected: n * dof,
                got: p.start.len().min(p.diff.len()),
            });
        }
        let table = {
            let mut t = lock(&self.order);
            Arc::make_mut(&mut t).ensure(&p.segments)?;
            t.clone()
        };
        let variant = self.variant;
        self.split(n, |dev, range, out, t| {
            dev.motions(p, range, (kernel, variant), &table, None, out, t)
        })
    }
}

impl crate::planners::device::DevicePlanner for CudaChecker {
    /// Every problem in this checker's scene, on its first device, with the kernels of its
    /// variant.
    fn rrt_connect_sets(
        &self,
        problems: &[crate::planners::device::DeviceProblem<'_>],
        settings: &crate::planners::device::DeviceRrtcSettings,
    ) -> Result<Vec<crate::planners::device::DeviceOutcome>, CollisionError> {
        let Some(dev) = self.devices.first() else {
            return Err(backend_err("no device"));
        };
        let mut dev = lock(dev);
        let func = dev.kernels(self.variant).rrtc[0].clone();
        rrtc::plan(&mut dev, &func, None, &self.space, problems, settings)
    }
}

impl Checker for CudaChecker {
    fn space(&self) -> &JointSpace {
        &self.space
    }

    fn device_planner(&self) -> Option<&dyn crate::planners::device::DevicePlanner> {
        Some(self)
    }

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        self.contact_names.contacts(&self.model, &self.scene, q)
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        // The f64 values are rounded to f32 and checked for NaN and infinities (the errors of
        // `validate_batch`) while they are copied into the pinned staging buffers.
        if configs.dof() != self.space.dof() {
            return Err(CollisionError::WrongDof {
                expected: self.space.dof(),
                got: configs.dof(),
            });
        }
        if self.combines_configs(configs.values().len()) {
            // Checked here: the combined batch goes in as f32, which staging does not check.
            validate_batch(&self.space, configs)?;
            return self.configs_combined(configs.values().iter().map(|&v| v as f32).collect());
        }
        self.configs_from(ConfigValues::F64(configs.values()))
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        let t0 = Instant::now();
        let p = prepare_motions_parallel(&self.space, motions, resolution)?;
        let prepare_ms = t0.elapsed().as_secs_f64() * 1e3;
        // Every refinement round is a query of its own: report their sum.
        let mut sum = GpuTimings::default();
        let mut first_round_ms = None;
        let verdicts = refine_motions_up_to(&p, max_refinements, |q| {
            let r0 = Instant::now();
            let statuses = self.prepared_combined(q)?;
            sum.add(&self.last_timings());
            first_round_ms.get_or_insert(r0.elapsed().as_secs_f64() * 1e3);
            Ok(statuses)
        })?;
        sum.wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        sum.prepare_ms = prepare_ms;
        sum.first_round_ms = first_round_ms.unwrap_or(0.0);
        *lock(&self.timings) = sum;
        Ok(verdicts)
    }

    fn backend(&self) -> Backend {
        Backend::Cuda
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_invert_the_visiting_order() {
        let order = [2u32, 4, 3, 0, 1];
        let pos = positions(&order);
        assert_eq!(pos, vec![3, 4, 0, 2, 1]);
        for (i, &slot) in order.iter().enumerate() {
            assert_eq!(pos[slot as usize] as usize, i);
        }
        assert!(positions(&[]).is_empty());
    }

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_ms(&mut []), 0.0);
        // Two pieces' kernels with a gap, the first piece's exact pass running over the gap
        // into the second piece, the second's exact pass right after it.
        let mut v = vec![(0.0, 1.0), (1.5, 2.5), (0.9, 1.7), (2.5, 2.6)];
        assert!((union_ms(&mut v) - 2.6).abs() < 1e-12);
        // A gap nothing ran in is not counted.
        let mut v = vec![(2.0, 3.0), (0.0, 1.0), (0.5, 0.8)];
        assert!((union_ms(&mut v) - 2.0).abs() < 1e-12);
        // Nested and unsorted; an interval ending before it starts counts nothing.
        let mut v = vec![(3.0, 4.0), (0.0, 5.0), (1.0, 2.0), (7.0, 6.0)];
        assert!((union_ms(&mut v) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn sort_sizes_match_the_kernels() {
        let define = |name: &str| -> usize {
            let line = kernels::COLLISION_CU
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("{name} not defined"));
            line.split_whitespace()
                .nth(2)
                .unwrap()
                .trim_end_matches('u')
                .parse()
                .unwrap()
        };
        assert_eq!(define("GMP_SORT_BINS"), SORT_BINS);
        let tile = define("GMP_SORT_TILE");
        assert_eq!(SORT_BINS / tile, SORT_TILES);
        assert_eq!(tile / 4, SORT_SCAN_THREADS as usize);
        // Warp 0 of sort_scan reads every warp's sum and looks back over every earlier tile.
        assert!(SORT_SCAN_THREADS as usize / 32 <= 32 && SORT_SCAN_THREADS.is_multiple_of(32));
        assert_eq!(SORT_HIST_WORDS, SORT_BINS + 1 + SORT_TILES);
    }

    #[test]
    fn sort_spec_words_are_the_even_keys() {
        let space = JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![-1.0, 0.0],
            upper: vec![1.0, 2.0],
            continuous: vec![false; 2],
            max_velocity: vec![1.0; 2],
            max_acceleration: vec![1.0; 2],
            max_jerk: vec![f64::INFINITY; 2],
        };
        let w = sort_spec(&space);
        assert_eq!(w.len(), 6);
        assert_eq!((w[2], w[5]), (8, 8));
        assert_eq!(f32::from_bits(w[3]), 0.0);
        assert_eq!(f32::from_bits(w[4]), 128.0);
    }

    #[test]
    fn pipeline_pieces_cover_the_batch() {
        // Waves: unknown, an H100 at 10 blocks of 128 per SM, a small device, one too large.
        for wave in [0, 132 * 10 * 128, 4 * 128, CONFIG_CHUNK] {
            for n in [
                1,
                7,
                MIN_PIECE,
                2 * MIN_PIECE - 1,
                2 * MIN_PIECE,
                1_000_000,
                10_000_000,
                40_000_000,
            ] {
                let (piece, slots) = pipeline_shape(n, wave);
                assert!((1..=PIPE_SLOTS).contains(&slots), "{n}");
                assert!(
                    piece * slots <= CONFIG_CHUNK.max(n.min(2 * MIN_PIECE)),
                    "{n}"
                );
                let pieces = n.div_ceil(piece);
                assert!(pieces * piece >= n && (pieces - 1) * piece < n, "{n}");
                if n >= 2 * MIN_PIECE {
                    assert!(pieces >= 2, "{n}: {pieces} pieces of {piece}");
                    if wave > 0 && wave <= CONFIG_CHUNK / PIPE_SLOTS {
                        assert_eq!(piece % wave, 0, "{n}, wave {wave}: piece {piece}");
                    } else {
                        assert!(piece >= MIN_PIECE, "{n}: piece {piece}");
                    }
                } else {
                    assert_eq!(pieces, 1, "{n}");
                }
            }
        }
        // The H100 case: 1e6 configurations in whole waves of 168,960 (two per piece).
        assert_eq!(pipeline_shape(1_000_000, 168_960), (337_920, 3));
    }

    #[test]
    fn motion_pieces_cover_the_batch_in_order() {
        let lens = |n: usize, f: &dyn Fn(usize) -> u32| (0..n).map(f).collect::<Vec<u32>>();
        for (seg, want) in [
            (Vec::new(), 0),
            (lens(1, &|_| 5), 1),
            (lens(2 * MOTION_PIECE_MIN - 1, &|i| (i % 7) as u32), 1),
            (lens(2 * MOTION_PIECE_MIN, &|i| (i % 7) as u32), 2),
            (lens(100_000, &|i| 60 + (i % 80) as u32), 3),
            (lens(1_000_000, &|i| 60 + (i % 80) as u32), MOTION_PIECES),
        ] {
            let pieces = motion_pieces(&seg, MOTION_PIECES);
            assert_eq!(pieces.len(), want, "{} motions", seg.len());
            let mut next = 0;
            for r in &pieces {
                assert_eq!(r.start, next);
                assert!(!r.is_empty() && r.len() <= MOTION_CHUNK);
                let items: u64 = seg[r.clone()].iter().map(|&s| u64::from(s) + 1).sum();
                assert!(items <= ITEM_CHUNK || r.len() == 1);
                if pieces.len() > 1 {
                    assert!(r.len() >= MOTION_PIECE_MIN, "{r:?}");
                }
                next = r.end;
            }
            assert_eq!(next, seg.len());
        }
        // Long motions: the item cap cuts the pieces, a motion longer than it is one piece.
        let seg = vec![(ITEM_CHUNK / 3) as u32; 7];
        let pieces = motion_pieces(&seg, MOTION_PIECES);
        assert_eq!(pieces.len(), 4);
        assert!(pieces.iter().all(|r| r.len() <= 2));
        let seg = vec![ITEM_CHUNK as u32 + 5, 1];
        assert_eq!(motion_pieces(&seg, MOTION_PIECES), vec![0..1, 1..2]);
        // One piece when asked for, unless the caps require more.
        let seg = vec![100u32; 1_000_000];
        assert_eq!(motion_pieces(&seg, 1), vec![0..1_000_000]);
        assert_eq!(motion_pieces(&seg, 0), vec![0..1_000_000]);
    }

    #[test]
    fn motion_slots_hold_every_layout() {
        for seg in [
            vec![0u32],
            vec![1, 0, 31, 32, 33],
            (0..5000).map(|i| (i * 37 % 301) as u32).collect::<Vec<_>>(),
            vec![6400; 3],
        ] {
            for dof in [1, 7, 9] {
                let cn = seg.len();
                let bound = motion_words_bound(&seg, dof);
                let (perm, rank_off) = rank_major(&seg);
                // Balanced with a scene per motion (the hub's launches).
                assert!(2 * cn * dof + cn + perm.len() + rank_off.len() + cn <= bound);
                let (perm, part_off, tiles) = tiled_layout(&seg);
                assert!(2 * cn * dof + cn + perm.len() + part_off.len() + tiles.len() <= bound);
            }
        }
    }

    #[test]
    fn rank_major_layout_covers_every_item_once() {
        let seg = [3u32, 1, 5, 1, 0, 3];
        let (perm, rank_off) = rank_major(&seg);
        assert_eq!(rank_off.len(), 7); // max length 6, plus one
        let total: u32 = seg.iter().map(|&n| n + 1).sum();
        assert_eq!(*rank_off.last().unwrap(), total);
        // Longest first, stable.
        assert_eq!(perm, vec![2, 0, 5, 1, 3, 4]);
        // Enumerate items as the kernel does and check each (motion, rank) appears once.
        let mut seen = std::collections::BTreeSet::new();
        for g in 0..total {
            let r = (0..rank_off.len() - 1)
                .rfind(|&r| rank_off[r] <= g)
                .unwrap();
            let m = perm[(g - rank_off[r]) as usize] as usize;
            assert!(r as u32 <= seg[m]);
            assert!(seen.insert((m, r)));
        }
        assert_eq!(seen.len(), total as usize);
    }

    /// The items of the tiled layout as `check_motions_tiled` reads them: `(motion, rank)` per
    /// item, `None` for padding.
    fn tiled_items(seg: &[u32]) -> Vec<Option<(usize, u32)>> {
        let (perm, part_off, tiles) = tiled_layout(seg);
        let n_tiles = (tiles.len() - 1) / 3;
        let t = MOTION_TILE;
        (0..tiles[n_tiles])
            .map(|g| {
                let b = (0..n_tiles).rfind(|&b| tiles[b] <= g).unwrap();
                let (full, alive) = (tiles[n_tiles + 1 + b], tiles[2 * n_tiles + 1 + b]);
                let mut local = g - tiles[b];
                let (k, r) = if local < t * full {
                    (local / t, t * b as u32 + local % t)
                } else {
                    if full >= alive {
                        return None;
                    }
                    local -= t * full;
                    let k = (full..alive)
                        .rfind(|&k| part_off[k as usize] <= local)
                        .unwrap();
                    (k, t * b as u32 + local - part_off[k as usize])
                };
                let m = perm[k as usize] as usize;
                (r <= seg[m]).then_some((m, r))
            })
            .collect()
    }

    #[test]
    fn tiled_layout_covers_every_item_once_in_whole_tiles() {
        let mut rng = 12345u64;
        let mut next = |m: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % m
        };
        let mut cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![31, 31],
            vec![32, 0, 63, 64, 95, 5],
            vec![3, 1, 5, 1, 0, 3],
        ];
        for _ in 0..20 {
            let n = 1 + next(40) as usize;
            cases.push((0..n).map(|_| next(150) as u32).collect());
        }
        for seg in cases {
            let items = tiled_items(&seg);
            assert_eq!(items.len() % 32, 0, "{seg:?}: tiles padded to whole warps");
            let mut seen = std::collections::BTreeSet::new();
            for &(m, r) in items.iter().flatten() {
                assert!(seen.insert((m, r)), "{seg:?}: ({m}, {r}) twice");
            }
            let want: usize = seg.iter().map(|&n| n as usize + 1).sum();
            assert_eq!(seen.len(), want, "{seg:?}");
            // Earlier tiles first: no item of rank < 32 b after one of tile b.
            let ranks: Vec<u32> = items
                .iter()
                .flatten()
                .map(|&(_, r)| r / MOTION_TILE)
                .collect();
            assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{seg:?}");
            // A warp of a motion's full tile holds that motion's 32 ranks.
            for w in items.chunks(32) {
                if w.iter().all(Option::is_some) {
                    let m = w[0].map(|x| x.0);
                    let same = w.iter().all(|x| x.map(|x| x.0) == m);
                    let ranks: Vec<u32> = w.iter().flatten().map(|x| x.1).collect();
                    if same {
                        assert!(ranks.windows(2).all(|p| p[1] == p[0] + 1), "{seg:?}");
                    }
                }
            }
        }
        // Lengths 33 and 2: tile 0 holds 32 ranks of the first, then the 2 of the second,
        // padded to 64; tile 1 holds the first's last rank, padded to 32.
        let items = tiled_items(&[1, 32]);
        assert_eq!(items.len(), 96);
        assert!(items[..32].iter().all(|x| x.is_some_and(|(m, _)| m == 1)));
        assert_eq!(items[32..34], [Some((0, 0)), Some((0, 1))]);
        assert!(items[34..64].iter().all(Option::is_none));
        assert_eq!(items[64], Some((1, 32)));
    }

    #[test]
    fn staging_rounds_and_finds_the_first_non_finite_value() {
        let n = 3 * STAGE_GRAIN + 12345;
        let src: Vec<f64> = (0..n).map(|i| (i as f64) * 0.37 - 1e5).collect();
        let mut dst = vec![0u32; n];
        assert_eq!(stage_values(ConfigValues::F64(&src), &mut dst), None);
        assert!(src
            .iter()
            .zip(&dst)
            .all(|(s, d)| (*s as f32).to_bits() == *d));
        let mut bad = src.clone();
        bad[2 * STAGE_GRAIN + 7] = f64::INFINITY;
        bad[STAGE_GRAIN + 3] = f64::NAN;
        bad[n - 1] = f64::NAN;
        assert_eq!(
            stage_values(ConfigValues::F64(&bad), &mut dst),
            Some(STAGE_GRAIN + 3)
        );
        let small = [1.0, f64::NEG_INFINITY, 2.0];
        assert_eq!(
            stage_values(ConfigValues::F64(&small), &mut dst[..3]),
            Some(1)
        );
        let f: Vec<f32> = src.iter().map(|&v| v as f32).collect();
        let mut dst2 = vec![0u32; n];
        assert_eq!(stage_values(ConfigValues::F32(&f), &mut dst2), None);
        assert!(f.iter().zip(&dst2).all(|(s, d)| s.to_bits() == *d));
    }

    #[test]
    fn frame_words_are_rotation_then_translation() {
        let x = Xf {
            r: [1.0, -2.0, 3.5, 0.25, f32::NAN, -0.0, 7.0, 8.0, 9.0],
            t: [1e-30, -4.0, f32::INFINITY],
        };
        let words: Vec<u32> = x.r.iter().chain(&x.t).map(|v| v.to_bits()).collect();
        let back = xf_of_words(&words);
        let bits = |x: &Xf| -> Vec<u32> { x.r.iter().chain(&x.t).map(|v| v.to_bits()).collect() };
        assert_eq!(bits(&back), words, "bit for bit, NaN and -0 included");
        // A short record reads missing words as zero instead of panicking.
        assert_eq!(xf_of_words(&words[..3]).t, [0.0; 3]);
    }

    #[test]
    fn order_table_holds_bisection_orders() {
        let mut t = OrderTable::default();
        t.ensure(&[4, 1, 4, 7]).unwrap();
        for n in [1u32, 4, 7] {
            let o = t.off[n as usize] as usize;
            assert_eq!(&t.order[o..o + n as usize + 1], &bisection_order(n)[..]);
        }
        let v = t.version;
        t.ensure(&[7, 1]).unwrap();
        assert_eq!(t.version, v, "no change, no new version");
    }
}
