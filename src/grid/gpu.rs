//! The CUDA backend of the grid planner (host side, cudarc).
//!
//! `kernels/grid_pba.cu` is embedded and compiled by NVRTC once per process for the device's
//! own compute capability. The context is created here for now (one per process, device 0);
//! the lead will later move context handling into the shared GPU module.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::CompileOptions;

use super::pba::{BlockLayout, INF, WAVE_TILE};
use super::{GridError, PlanStats, PlannerOps};

/// The CUDA source of the grid kernels.
pub const KERNEL_SOURCE: &str = include_str!("../../kernels/grid_pba.cu");

/// Names of the kernels in [`KERNEL_SOURCE`].
pub const KERNEL_NAMES: [&str; 10] = [
    "block_field",
    "border_next",
    "chain_init",
    "chain_jump",
    "chain_finish",
    "start_to_border",
    "repair",
    "fill_field",
    "field_directions",
    "gather",
];

/// NVRTC options for the grid kernels on an architecture such as `"compute_90"`.
pub fn compile_options(arch: &'static str) -> CompileOptions {
    CompileOptions {
        arch: Some(arch),
        ..Default::default()
    }
}

fn cuda_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> GridError + '_ {
    move |e| GridError::Cuda(format!("{what}: {e:?}"))
}

/// The NVRTC architecture name for a compute capability.
fn arch_name(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (7, 0) => "compute_70",
        (7, 5) => "compute_75",
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 9) => "compute_89",
        (9, 0) => "compute_90",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        _ => "compute_75",
    }
}

/// A CUDA context with the grid kernels loaded.
pub struct GpuGrid {
    /// The device's name.
    pub device_name: String,
    stream: Arc<CudaStream>,
    functions: Vec<CudaFunction>,
}

static SHARED: OnceLock<Result<Arc<GpuGrid>, String>> = OnceLock::new();

impl GpuGrid {
    /// The process-wide context on device 0, created on first use. Fails (without panicking)
    /// when there is no driver, no device, or the kernels do not compile.
    pub fn shared() -> Result<Arc<GpuGrid>, GridError> {
        SHARED
            .get_or_init(|| Self::open().map(Arc::new).map_err(|e| e.to_string()))
            .clone()
            .map_err(GridError::Cuda)
    }

    fn open() -> Result<Self, GridError> {
        if !super::cuda_driver_present() {
            return Err(GridError::Cuda(
                "no CUDA driver library on this machine".into(),
            ));
        }
        let ctx = CudaContext::new(0).map_err(cuda_err("creating the context"))?;
        let device_name = ctx.name().map_err(cuda_err("device name"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(cuda_err("compute capability"))?;
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(
            KERNEL_SOURCE,
            compile_options(arch_name(major, minor)),
        )
        .map_err(|e| GridError::Cuda(format!("compiling kernels/grid_pba.cu: {e:?}")))?;
        let module = ctx
            .load_module(ptx)
            .map_err(cuda_err("loading the module"))?;
        let mut functions = Vec::new();
        for name in KERNEL_NAMES {
            functions.push(module.load_function(name).map_err(cuda_err(name))?);
        }
        Ok(Self {
            device_name,
            stream: ctx.default_stream(),
            functions,
        })
    }

    fn f(&self, name: &str) -> &CudaFunction {
        let i = KERNEL_NAMES.iter().position(|n| *n == name).unwrap_or(0);
        &self.functions[i]
    }
}

fn grid_1d(n: usize) -> LaunchConfig {
    let threads = 256u32;
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(threads).max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn to_i32(v: &[u32]) -> Vec<i32> {
    v.iter().map(|&x| x as i32).collect()
}

/// The device buffers of one planning call; the GPU twin of [`super::CpuOps`].
pub(crate) struct GpuOps {
    gpu: Arc<GpuGrid>,
    layout: BlockLayout,
    goal: i32,
    cost: CudaSlice<i32>,
    h: CudaSlice<u32>,
    field: CudaSlice<u32>,
    dir: CudaSlice<u8>,
    border_cells: CudaSlice<i32>,
    border_of: CudaSlice<i32>,
    next: CudaSlice<i32>,
    seg: CudaSlice<u32>,
    jump: [CudaSlice<i32>; 2],
    acc: [CudaSlice<u32>; 2],
    ok: CudaSlice<u8>,
    chain: CudaSlice<u32>,
    dirty: CudaSlice<u8>,
    changed: CudaSlice<i32>,
    stats: PlanStats,
}

impl GpuOps {
    /// Uploads the grid and allocates the planner's buffers.
    pub(crate) fn new(
        gpu: Arc<GpuGrid>,
        costs: &[i32],
        width: u32,
        height: u32,
        side: u32,
        goal: u32,
    ) -> Result<Self, GridError> {
        let t = Instant::now();
        let layout = BlockLayout::new(width, height, side);
        let s = gpu.stream.clone();
        let n = costs.len();
        let nb = layout.border.len().max(1);
        let h_host: Vec<u32> = (0..n as u32)
            .map(|c| super::astar::manhattan(c, goal, width))
            .collect();
        let up = |what: &str, v: &[i32]| s.clone_htod(v).map_err(cuda_err(what));
        let zeros_u32 = |m: usize| s.alloc_zeros::<u32>(m).map_err(cuda_err("alloc"));
        let zeros_i32 = |m: usize| s.alloc_zeros::<i32>(m).map_err(cuda_err("alloc"));
        let zeros_u8 = |m: usize| s.alloc_zeros::<u8>(m).map_err(cuda_err("alloc"));
        let ops = Self {
            cost: up("costs", costs)?,
            h: s.clone_htod(&h_host).map_err(cuda_err("heuristic"))?,
            field: s.clone_htod(&vec![INF; n]).map_err(cuda_err("field"))?,
            dir: s.clone_htod(&vec![255u8; n]).map_err(cuda_err("dir"))?,
            border_cells: up("border cells", &to_i32(&layout.border))?,
            border_of: up("border index", &layout.border_of)?,
            next: zeros_i32(nb)?,
            seg: zeros_u32(nb)?,
            jump: [zeros_i32(nb)?, zeros_i32(nb)?],
            acc: [zeros_u32(nb)?, zeros_u32(nb)?],
            ok: zeros_u8(nb)?,
            chain: zeros_u32(nb)?,
            dirty: zeros_u8(layout.blocks() as usize)?,
            changed: zeros_i32(1024)?,
            goal: goal as i32,
            stats: PlanStats {
                backend: gpu.device_name.clone(),
                device_bytes: (n * (4 * 3 + 1 + 4 + 4) + nb * (4 * 6 + 1 + 4 + 4)) as u64
                    + layout.blocks() as u64
                    + 4096,
                ..Default::default()
            },
            layout,
            gpu,
        };
        ops.sync()?;
        let mut ops = ops;
        ops.stats.upload_ms += t.elapsed().as_secs_f64() * 1e3;
        Ok(ops)
    }

    fn sync(&self) -> Result<(), GridError> {
        self.gpu
            .stream
            .synchronize()
            .map_err(cuda_err("synchronize"))
    }

    fn upload<T: DeviceRepr>(&mut self, v: &[T]) -> Result<CudaSlice<T>, GridError> {
        let t = Instant::now();
        let r = self.gpu.stream.clone_htod(v).map_err(cuda_err("upload"));
        self.stats.upload_ms += t.elapsed().as_secs_f64() * 1e3;
        r
    }

    fn download<T: DeviceRepr + Default + Clone>(
        &mut self,
        v: &CudaSlice<T>,
    ) -> Result<Vec<T>, GridError> {
        let t = Instant::now();
        let r = self.gpu.stream.clone_dtoh(v).map_err(cuda_err("download"));
        self.stats.download_ms += t.elapsed().as_secs_f64() * 1e3;
        r
    }

    fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>, GridError> {
        self.gpu
            .stream
            .alloc_zeros::<T>(n.max(1))
            .map_err(cuda_err("alloc"))
    }

    /// Runs the block field kernel over `blocks` (the P-BA* field, or one wavefront round).
    #[allow(clippy::too_many_arguments)]
    fn launch_block_field(
        &self,
        blocks: &CudaSlice<i32>,
        nblocks: usize,
        wave: Option<&CudaSlice<u32>>,
        side: u32,
        changed_slot: usize,
    ) -> Result<(), GridError> {
        let (w, h) = (self.layout.width as i32, self.layout.height as i32);
        let side_i = side as i32;
        let (reinit, write_dir) = if wave.is_some() { (0i32, 0i32) } else { (1, 1) };
        let field = wave.unwrap_or(&self.field);
        let hsrc = wave.unwrap_or(&self.h);
        let changed = self.changed.slice(changed_slot..changed_slot + 1);
        let cfg = LaunchConfig {
            grid_dim: (nblocks as u32, 1, 1),
            block_dim: (side * side, 1, 1),
            shared_mem_bytes: side * side * 8,
        };
        let f = self.gpu.f("block_field");
        let mut b = self.gpu.stream.launch_builder(f);
        b.arg(&self.cost)
            .arg(field)
            .arg(hsrc)
            .arg(blocks)
            .arg(&w)
            .arg(&h)
            .arg(&side_i)
            .arg(&self.goal)
            .arg(&reinit)
            .arg(&write_dir)
            .arg(&self.dir)
            .arg(&changed);
        // SAFETY: the arguments match the kernel's signature; every buffer holds the cells or
        // blocks the kernel indexes (blocks < nbx * nby, cells < width * height).
        unsafe { b.launch(cfg) }.map_err(cuda_err("block_field"))?;
        Ok(())
    }
}

impl PlannerOps for GpuOps {
    fn border_to_border(&mut self, blocks: &[u32]) -> Result<(), GridError> {
        if blocks.is_empty() {
            return Ok(());
        }
        let mut tiles = Vec::new();
        for &b in blocks {
            tiles.extend_from_slice(self.layout.border_tiles(b));
        }
        let blocks_d = self.upload(&to_i32(blocks))?;
        let tiles_d = self.upload(&to_i32(&tiles))?;
        let t = Instant::now();
        self.launch_block_field(&blocks_d, blocks.len(), None, self.layout.side, 0)?;
        if !tiles.is_empty() {
            let (w, h, s) = (
                self.layout.width as i32,
                self.layout.height as i32,
                self.layout.side as i32,
            );
            let nt = tiles.len() as i32;
            let f = self.gpu.f("border_next");
            let mut b = self.gpu.stream.launch_builder(f);
            b.arg(&self.cost)
                .arg(&self.dir)
                .arg(&self.border_cells)
                .arg(&self.border_of)
                .arg(&tiles_d)
                .arg(&nt)
                .arg(&w)
                .arg(&h)
                .arg(&s)
                .arg(&self.next)
                .arg(&self.seg);
            // SAFETY: matches `border_next`; tiles index border buffers of length nb.
            unsafe { b.launch(grid_1d(tiles.len())) }.map_err(cuda_err("border_next"))?;
        }
        self.sync()?;
        self.stats.blocks_computed += blocks.len() as u64;
        self.stats.border_to_border_ms += t.elapsed().as_secs_f64() * 1e3;
        Ok(())
    }

    fn chains(&mut self) -> Result<(), GridError> {
        let nb = self.layout.border.len();
        if nb == 0 {
            return Ok(());
        }
        let t = Instant::now();
        let nb_i = nb as i32;
        let st = self.gpu.stream.clone();
        {
            let f = self.gpu.f("chain_init");
            let mut b = st.launch_builder(f);
            b.arg(&self.next)
                .arg(&self.seg)
                .arg(&self.jump[0])
                .arg(&self.acc[0])
                .arg(&nb_i);
            // SAFETY: all buffers hold nb elements.
            unsafe { b.launch(grid_1d(nb)) }.map_err(cuda_err("chain_init"))?;
        }
        let rounds = usize::BITS - nb.leading_zeros(); // 2^rounds > nb
        let mut cur = 0usize;
        for _ in 0..rounds {
            let f = self.gpu.f("chain_jump");
            let (jin, jout) = (&self.jump[cur], &self.jump[1 - cur]);
            let (ain, aout) = (&self.acc[cur], &self.acc[1 - cur]);
            let mut b = st.launch_builder(f);
            b.arg(jin).arg(ain).arg(jout).arg(aout).arg(&nb_i);
            // SAFETY: all buffers hold nb elements.
            unsafe { b.launch(grid_1d(nb)) }.map_err(cuda_err("chain_jump"))?;
            cur = 1 - cur;
        }
        {
            let f = self.gpu.f("chain_finish");
            let mut b = st.launch_builder(f);
            b.arg(&self.jump[cur])
                .arg(&self.acc[cur])
                .arg(&self.ok)
                .arg(&self.chain)
                .arg(&nb_i);
            // SAFETY: all buffers hold nb elements.
            unsafe { b.launch(grid_1d(nb)) }.map_err(cuda_err("chain_finish"))?;
        }
        self.sync()?;
        self.stats.chains_ms += t.elapsed().as_secs_f64() * 1e3;
        Ok(())
    }

    fn start_to_border(&mut self, starts: &[u32]) -> Result<Vec<u32>, GridError> {
        if starts.is_empty() {
            return Ok(Vec::new());
        }
        let starts_d = self.upload(&to_i32(starts))?;
        let out: CudaSlice<u32> = self.zeros(starts.len())?;
        let t = Instant::now();
        let (w, h, s) = (
            self.layout.width as i32,
            self.layout.height as i32,
            self.layout.side as i32,
        );
        let n = starts.len() as i32;
        let f = self.gpu.f("start_to_border");
        let mut b = self.gpu.stream.launch_builder(f);
        b.arg(&self.cost)
            .arg(&self.dir)
            .arg(&self.border_of)
            .arg(&self.ok)
            .arg(&self.chain)
            .arg(&starts_d)
            .arg(&n)
            .arg(&w)
            .arg(&h)
            .arg(&s)
            .arg(&out);
        // SAFETY: matches `start_to_border`; starts are valid cell indices.
        unsafe { b.launch(grid_1d(starts.len())) }.map_err(cuda_err("start_to_border"))?;
        self.sync()?;
        self.stats.start_to_border_ms += t.elapsed().as_secs_f64() * 1e3;
        self.download(&out)
    }

    fn repair(&mut self) -> Result<Vec<u32>, GridError> {
        let nb = self.layout.border.len();
        if nb == 0 {
            return Ok(Vec::new());
        }
        let t = Instant::now();
        let st = self.gpu.stream.clone();
        st.memset_zeros(&mut self.dirty)
            .map_err(cuda_err("memset"))?;
        let (w, h, s) = (
            self.layout.width as i32,
            self.layout.height as i32,
            self.layout.side as i32,
        );
        let nb_i = nb as i32;
        let f = self.gpu.f("repair");
        let mut b = st.launch_builder(f);
        b.arg(&self.cost)
            .arg(&self.field)
            .arg(&self.h)
            .arg(&self.border_cells)
            .arg(&self.ok)
            .arg(&nb_i)
            .arg(&w)
            .arg(&h)
            .arg(&s)
            .arg(&self.dirty);
        // SAFETY: matches `repair`; dirty holds one flag per block.
        unsafe { b.launch(grid_1d(nb)) }.map_err(cuda_err("repair"))?;
        self.sync()?;
        self.stats.repair_ms += t.elapsed().as_secs_f64() * 1e3;
        let dirty = self
            .gpu
            .stream
            .clone_dtoh(&self.dirty)
            .map_err(cuda_err("download"))?;
        Ok((0..dirty.len() as u32)
            .filter(|&b| dirty[b as usize] != 0)
            .collect())
    }

    fn pba_directions(&mut self) -> Result<Vec<u8>, GridError> {
        let dir = self.dir.clone();
        self.download(&dir)
    }

    fn wavefront(&mut self, starts: &[u32]) -> Result<(Vec<u32>, Vec<u8>), GridError> {
        let n = self.layout.width as usize * self.layout.height as usize;
        let (w, h) = (self.layout.width as i32, self.layout.height as i32);
        let tiles_x = self.layout.width.div_ceil(WAVE_TILE);
        let tiles = tiles_x * self.layout.height.div_ceil(WAVE_TILE);
        let all: Vec<i32> = (0..tiles as i32).collect();
        let tiles_d = self.upload(&all)?;
        let starts_d = self.upload(&to_i32(starts))?;
        let t = Instant::now();
        let st = self.gpu.stream.clone();
        let wave: CudaSlice<u32> = self.zeros(n)?;
        let wave_dir: CudaSlice<u8> = self.zeros(n)?;
        let out: CudaSlice<u32> = self.zeros(starts.len())?;
        self.stats.device_bytes += (n * 5 + starts.len() * 8) as u64;
        {
            let n_i = n as i32;
            let f = self.gpu.f("fill_field");
            let mut b = st.launch_builder(f);
            b.arg(&wave).arg(&n_i).arg(&self.goal);
            // SAFETY: wave holds n cells.
            unsafe { b.launch(grid_1d(n)) }.map_err(cuda_err("fill_field"))?;
        }
        // Relaxation rounds in growing batches; a round that changes nothing means the field
        // is the exact distance field (the unique fixed point).
        let mut rounds = 0u32;
        let mut batch = 8usize;
        let limit = n as u32 + 2;
        loop {
            st.memset_zeros(&mut self.changed)
                .map_err(cuda_err("memset"))?;
            for r in 0..batch {
                self.launch_block_field(&tiles_d, tiles as usize, Some(&wave), WAVE_TILE, r)?;
            }
            rounds += batch as u32;
            let flags = st.clone_dtoh(&self.changed).map_err(cuda_err("download"))?;
            if flags[..batch].contains(&0) {
                break;
            }
            if rounds > limit {
                return Err(GridError::Cuda("wavefront did not converge".into()));
            }
            batch = (batch * 2).min(self.changed.len());
        }
        {
            let f = self.gpu.f("field_directions");
            let mut b = st.launch_builder(f);
            b.arg(&self.cost)
                .arg(&wave)
                .arg(&w)
                .arg(&h)
                .arg(&self.goal)
                .arg(&wave_dir);
            // SAFETY: all buffers hold n cells.
            unsafe { b.launch(grid_1d(n)) }.map_err(cuda_err("field_directions"))?;
        }
        if !starts.is_empty() {
            let m = starts.len() as i32;
            let f = self.gpu.f("gather");
            let mut b = st.launch_builder(f);
            b.arg(&wave).arg(&starts_d).arg(&m).arg(&out);
            // SAFETY: starts are valid cells, out holds one value per start.
            unsafe { b.launch(grid_1d(starts.len())) }.map_err(cuda_err("gather"))?;
        }
        self.sync()?;
        self.stats.wavefront_rounds = rounds;
        self.stats.wavefront_ms += t.elapsed().as_secs_f64() * 1e3;
        let mut costs = self.download(&out)?;
        costs.truncate(starts.len());
        let dir = self.download(&wave_dir)?;
        Ok((costs, dir))
    }

    fn stats(&mut self) -> &mut PlanStats {
        &mut self.stats
    }
}
