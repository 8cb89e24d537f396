//! The CUDA engine of the dynamic roadmap's RGG labels (`kernels/drm.cu`, `rgg_label`).
//!
//! The flat layout of the approximations (`RggLayout` in
//! `planners/dynamic_roadmap/layout.rs`: pair boxes, outer boxes, capsule offsets, capsules,
//! capsule chunk boxes) is uploaded once and stays resident. Per changed obstacle: one copy of
//! the obstacle record (its outer box, world box and inner balls, a few hundred bytes) to the
//! device, one clear of the output, one launch with a thread per (edge, body) pair, and one
//! copy back of two bits per edge, handed on packed as they are. The verdicts are those of
//! `RggLayout::verdicts_brute_force` exactly (same f32 operations in the same order, no fused
//! multiply-add; `tests/gpu_parity.rs` holds them to it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    PinnedHostSlice, PushKernelArg,
};

use super::{backend_err, device_module, drv, ensure_dev, ensure_pinned, launch_cfg, lock};
use crate::collision::CollisionError;
use crate::planners::dynamic_roadmap::geom::{Aabb, Capsule, Obb};
use crate::planners::dynamic_roadmap::layout::{RggLayout, VerdictBits};
use crate::planners::dynamic_roadmap::obstacle::ObstacleApprox;

// SAFETY: #[repr(C)] records of f32 fields only (`GmpObb`, `GmpAabb`, `GmpCapsule` in
// kernels/drm.cu), valid for any bit pattern and copied as bytes.
unsafe impl DeviceRepr for Obb {}
unsafe impl DeviceRepr for Aabb {}
unsafe impl DeviceRepr for Capsule {}

/// The kernel's view of the resident layout (`GmpRggLayout` in `kernels/drm.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RggArgs {
    pair_boxes: u64,
    obbs: u64,
    cap_offsets: u64,
    caps: u64,
    cap_chunks: u64,
    pairs: u32,
    bodies: u32,
    pieces: u32,
    pad: u32,
}

// SAFETY: plain #[repr(C)] data of u64/u32 fields, laid out exactly as `GmpRggLayout`.
unsafe impl DeviceRepr for RggArgs {}

/// Floats of the obstacle record before its balls: outer box (15) and world box (6).
const OBSTACLE_HEAD: usize = 21;

/// Time spent by the last verdict pass (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RggTimings {
    /// Obstacle upload and output clear (CUDA events).
    pub htod_ms: f64,
    /// The kernel (CUDA events).
    pub kernel_ms: f64,
    /// Copy back of the verdict bits (CUDA events).
    pub dtoh_ms: f64,
    /// The whole pass on the host: staging, the above, the copy of the packed verdicts.
    pub wall_ms: f64,
}

/// A device's context and compiled dynamic-roadmap module, shared by the process.
pub(super) struct DrmModule {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) module: Arc<CudaModule>,
    pub(super) name: String,
}

type DrmCache = Mutex<HashMap<usize, Result<Arc<DrmModule>, String>>>;

/// The context of device `ordinal` (the collision backend's) with `drm.cu` compiled for it.
pub(super) fn drm_module(ordinal: usize) -> Result<Arc<DrmModule>, CollisionError> {
    static CACHE: OnceLock<DrmCache> = OnceLock::new();
    let base = device_module(ordinal)?;
    let mut cache = lock(CACHE.get_or_init(|| Mutex::new(HashMap::new())));
    let entry = cache.entry(ordinal).or_insert_with(|| {
        let (major, minor) = base
            .ctx
            .compute_capability()
            .map_err(|e| format!("device {ordinal}: compute capability: {e:?}"))?;
        let ptx = super::kernels::compile_drm(super::kernels::arch_for(major, minor))?;
        let module = base
            .ctx
            .load_module(ptx)
            .map_err(|e| format!("device {ordinal}: loading the dynamic-roadmap module: {e:?}"))?;
        Ok(Arc::new(DrmModule {
            ctx: base.ctx.clone(),
            module,
            name: base.name.clone(),
        }))
    });
    entry.clone().map_err(backend_err)
}

/// Uploads `v`, or one `pad` element when it is empty (no null device pointers).
fn upload_records<T: DeviceRepr + Copy>(
    stream: &Arc<CudaStream>,
    v: &[T],
    pad: T,
) -> Result<CudaSlice<T>, CollisionError> {
    if v.is_empty() {
        stream.clone_htod(&[pad][..])
    } else {
        stream.clone_htod(v)
    }
    .map_err(drv("layout upload"))
}

fn ptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// Everything the engine keeps on the device, behind the engine's lock.
struct State {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    func: CudaFunction,
    // The resident layout; the kernel reaches it through `args`.
    _pair_boxes: CudaSlice<Aabb>,
    _obbs: CudaSlice<Obb>,
    _cap_offsets: CudaSlice<u32>,
    _caps: CudaSlice<Capsule>,
    _cap_chunks: CudaSlice<Aabb>,
    args: RggArgs,
    edges: usize,
    obstacle: CudaSlice<u32>,
    staging: PinnedHostSlice<u32>,
    out: CudaSlice<u32>,
    out_host: PinnedHostSlice<u32>,
    events: [CudaEvent; 4],
}

/// The RGG approximations resident on one GPU, and the kernel that labels them against one
/// obstacle. Built by `DynamicRoadmap::set_rgg_engine(RggEngine::Cuda)`.
pub struct RggDevice {
    state: Mutex<State>,
    name: String,
    timings: Mutex<RggTimings>,
}

impl std::fmt::Debug for RggDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RggDevice")
            .field("device", &self.name)
            .finish()
    }
}

impl RggDevice {
    /// Uploads `layout` to device `ordinal` and loads the kernel. Fails with a clear message
    /// when no GPU is usable or the layout does not fit the kernel's 32-bit indices.
    pub(crate) fn new(layout: &RggLayout, ordinal: usize) -> Result<Self, CollisionError> {
        if super::device_count() <= ordinal {
            return Err(backend_err(format!(
                "no CUDA device {ordinal} (libcuda missing or no GPU visible)"
            )));
        }
        let pairs = layout.pairs();
        if pairs >= u32::MAX as usize || layout.obbs.len() >= u32::MAX as usize {
            return Err(backend_err(format!(
                "{pairs} (edge, body) pairs are too many for the CUDA label kernel"
            )));
        }
        let dm = drm_module(ordinal)?;
        let ctx = dm.ctx.clone();
        let stream = ctx.new_stream().map_err(drv("creating a stream"))?;
        let func = dm
            .module
            .load_function("rgg_label")
            .map_err(|e| backend_err(format!("kernel 'rgg_label' not found: {e:?}")))?;
        let pair_boxes = upload_records(&stream, &layout.pair_boxes, Aabb::EMPTY)?;
        let obbs = upload_records(&stream, &layout.obbs, Obb::default())?;
        let cap_offsets = upload_records(&stream, &layout.cap_offsets, 0u32)?;
        let empty_cap = Capsule {
            a: [0.0; 3],
            b: [0.0; 3],
            r: 0.0,
        };
        let caps = upload_records(&stream, &layout.caps, empty_cap)?;
        let cap_chunks = upload_records(&stream, &layout.cap_chunks, Aabb::EMPTY)?;
        let args = RggArgs {
            pair_boxes: ptr(&pair_boxes, &stream),
            obbs: ptr(&obbs, &stream),
            cap_offsets: ptr(&cap_offsets, &stream),
            caps: ptr(&caps, &stream),
            cap_chunks: ptr(&cap_chunks, &stream),
            pairs: pairs as u32,
            bodies: layout.bodies.max(1) as u32,
            pieces: layout.pieces as u32,
            pad: 0,
        };
        let ev = || {
            ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("creating an event"))
        };
        let events = [ev()?, ev()?, ev()?, ev()?];
        let words = layout.edges.div_ceil(16).max(1);
        let state = State {
            obstacle: unsafe { stream.alloc::<u32>(OBSTACLE_HEAD + 4 * 64) }
                .map_err(drv("device allocation"))?,
            staging: unsafe { ctx.alloc_pinned_with_flags::<u32>(OBSTACLE_HEAD + 4 * 64, 0) }
                .map_err(drv("pinned host allocation"))?,
            out: unsafe { stream.alloc::<u32>(words) }.map_err(drv("device allocation"))?,
            out_host: unsafe { ctx.alloc_pinned_with_flags::<u32>(words, 0) }
                .map_err(drv("pinned host allocation"))?,
            _pair_boxes: pair_boxes,
            _obbs: obbs,
            _cap_offsets: cap_offsets,
            _caps: caps,
            _cap_chunks: cap_chunks,
            args,
            edges: layout.edges,
            func,
            events,
            stream,
            ctx,
        };
        state.stream.synchronize().map_err(drv("layout upload"))?;
        Ok(Self {
            state: Mutex::new(state),
            name: dm.name.clone(),
            timings: Mutex::new(RggTimings::default()),
        })
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// Timings of the last verdict pass.
    pub fn last_timings(&self) -> RggTimings {
        *lock(&self.timings)
    }

    /// The verdicts of every edge against `o`, packed (equal to the CPU engines' once packed).
    pub(crate) fn verdicts(&self, o: &ObstacleApprox) -> Result<VerdictBits, CollisionError> {
        let t0 = Instant::now();
        let mut st = lock(&self.state);
        let st = &mut *st;
        if st.edges == 0 {
            return Ok(Vec::new());
        }
        let n_balls = o.inner.len();
        let words = OBSTACLE_HEAD + 4 * n_balls;
        ensure_dev(&st.stream, &mut st.obstacle, words)?;
        ensure_pinned(&st.ctx, &mut st.staging, words)?;
        {
            let stg = st.staging.as_mut_slice().map_err(drv("pinned buffer"))?;
            let head = o
                .outer
                .c
                .iter()
                .chain(&o.outer.r)
                .chain(&o.outer.h)
                .chain(&o.aabb.lo)
                .chain(&o.aabb.hi);
            for (d, v) in stg.iter_mut().zip(head.chain(o.inner.iter().flatten())) {
                *d = v.to_bits();
            }
        }
        let out_words = st.edges.div_ceil(16);
        let s = st.stream.clone();
        st.events[0].record(&s).map_err(drv("event"))?;
        {
            // Raw asynchronous copies from and to pinned memory: one synchronisation per
            // update (the safe copies of host slices wait for the stream each).
            let src = &st.staging.as_slice().map_err(drv("pinned buffer"))?[..words];
            let (dst, _sync) = st.obstacle.device_ptr(&s);
            // SAFETY: the pinned staging buffer is not touched before the stream is
            // synchronised below; the device buffer holds at least `words` words.
            unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, s.cu_stream()) }
                .map_err(drv("obstacle upload"))?;
            let mut out = st.out.slice_mut(0..out_words);
            s.memset_zeros(&mut out).map_err(drv("clearing verdicts"))?;
        }
        st.events[1].record(&s).map_err(drv("event"))?;
        {
            let n_balls = n_balls as u32;
            let mut b = s.launch_builder(&st.func);
            b.arg(&st.args)
                .arg(&st.obstacle)
                .arg(&n_balls)
                .arg(&mut st.out);
            unsafe { b.launch(launch_cfg(st.args.pairs as usize)) }
                .map_err(drv("launching rgg_label"))?;
        }
        st.events[2].record(&s).map_err(drv("event"))?;
        {
            let (src, _sync) = st.out.device_ptr(&s);
            let dst = &mut st.out_host.as_mut_slice().map_err(drv("pinned buffer"))?[..out_words];
            // SAFETY: as above; the host buffer is read only after the synchronisation.
            unsafe { cudarc::driver::result::memcpy_dtoh_async(dst, src, s.cu_stream()) }
                .map_err(drv("copy to host"))?;
        }
        st.events[3].record(&s).map_err(drv("event"))?;
        s.synchronize().map_err(drv("rgg_label execution"))?;
        // The kernel's words are the packed verdicts as they are (no decoding on the host).
        let out = st.out_host.as_slice().map_err(drv("pinned buffer"))?[..out_words].to_vec();
        let el = |a: usize, b: usize| -> Result<f64, CollisionError> {
            Ok(st.events[a]
                .elapsed_ms(&st.events[b])
                .map_err(drv("event timing"))? as f64)
        };
        let t = RggTimings {
            htod_ms: el(0, 1)?,
            kernel_ms: el(1, 2)?,
            dtoh_ms: el(2, 3)?,
            wall_ms: t0.elapsed().as_secs_f64() * 1e3,
        };
        *lock(&self.timings) = t;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_match_the_kernel_structs() {
        // GmpObb 15 floats, GmpAabb 6, GmpCapsule 7; GmpRggLayout 5 pointers and 4 words.
        assert_eq!(std::mem::size_of::<Obb>(), 15 * 4);
        assert_eq!(std::mem::size_of::<Aabb>(), 6 * 4);
        assert_eq!(std::mem::size_of::<Capsule>(), 7 * 4);
        assert_eq!(std::mem::size_of::<RggArgs>(), 5 * 8 + 4 * 4);
        assert_eq!(OBSTACLE_HEAD, (15 + 6));
    }
}
