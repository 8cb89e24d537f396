//! The CUDA backend against the CPU reference.
//!
//! 1. NVRTC compiles every kernel (runs in CI: needs only libnvrtc, no GPU; skips with a message
//!    when libnvrtc cannot be found — `source scripts/nvrtc_env.sh` provides it).
//! 2. Parity: random configurations and motions on the MotionBenchMaker Panda, UR5 and Fetch
//!    scenes, every verdict compared with the CPU (`GMP_PARITY_CONFIGS`, default 20000, and
//!    `GMP_PARITY_MOTIONS`, default 2000, per robot). Skips with a message without a GPU.
//!    `GMP_PARITY_SHAPES=polytopes|spheres` runs one model (the sphere model runs at
//!    1/`GMP_PARITY_SPHERE_DIVISOR` of the sizes, default 4); `GMP_PARITY_MOTION_KERNEL` (a
//!    comma list of `naive`, `balanced`, `tiled`) compares those motion kernels,
//!    `GMP_PARITY_VARIANTS=generic|specialised` one kernel variant, and `GMP_PARITY_INDICES`
//!    (default `1,50`) picks the problem numbers whose scenes are used (to fit long runs, such as compute-sanitizer's, into a device call).
//!    `GMP_PARITY_TIMINGS=1` prints the wall time of every CPU and CUDA run.
//! 3. Scene updates (move, remove, add obstacles) followed by the same comparison; batches large
//!    enough to go through the pipelined path (`GMP_PARITY_PIPELINE_CONFIGS`, default 700001).
//! 4. The dynamic roadmap's CUDA label engine (`kernels/drm.cu`) against the CPU engines (BVH
//!    and brute force) on the MBM Panda: verdicts of random obstacles
//!    (`GMP_PARITY_DRM_OBSTACLES`, default 3000), labels after scene updates, and the labels of a
//!    roadmap built with the GPU (self-collision check on the CUDA checker).
//! 5. Forward kinematics (`CudaChecker::forward_kinematics`, the `fk_frames` kernel) against the
//!    CPU's `frame_poses`, bit for bit, on random MBM Panda configurations
//!    (`GMP_PARITY_FK_CONFIGS`, default 300000: two kernel rounds), and the DRM voxel map of Panda
//!    roadmaps built by the CUDA voxel kernels against the CPU-built map (identical cell -> edge
//!    lists; `GMP_PARITY_DRM_VERTICES` vertices). Both names contain `drm`, so
//!    `scripts/device_gpu.sh drm` runs them.
//!
//! Every comparison runs each CUDA kernel variant on the same batches: the generic table-driven
//! kernels and the robot-specialised ones (`src/gpu/specialise.rs`), which must be available
//! (unless `GMP_CUDA_KERNEL=generic`), each with the naive and the balanced motion kernel; the
//! robot parity tests also run the specialised kernels in their other layouts (inline, grouped,
//! their constant-folding builds inline-fold, grouped-fold, and looped; `GMP_PARITY_LAYOUTS`
//! restricts them).

mod common;

use gpu_motion_planner::collision::{
    frame_poses, Checker, CheckerOptions, CollisionError, ConfigBatch, CpuChecker, MotionBatch,
    RobotShapes,
};
use gpu_motion_planner::gpu::specialise::Layout;
use gpu_motion_planner::gpu::{
    self, kernels, CudaChecker, CudaOptions, KernelVariant, MotionKernel,
};
use gpu_motion_planner::planners::dynamic_roadmap::{
    sample_roadmap, DynamicRoadmap, DynamicRoadmapOptions, LabelMethod, RggEngine, VoxelEngine,
};
use gpu_motion_planner::roadmap::EdgeLabel;
use gpu_motion_planner::robot::spherize::{fit_robot, SphereFit};
use gpu_motion_planner::scene::{Obstacle, Scene};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn nvrtc_compiles_every_kernel() {
    if !common::nvrtc_or_skip("nvrtc_compiles_every_kernel") {
        return;
    }
    // Each translation unit, for every architecture we may meet.
    type Compile = fn(&'static str) -> Result<cudarc::nvrtc::Ptx, String>;
    let units: [(&str, Compile, &[&str]); 2] = [
        (
            "collision",
            kernels::compile_collision,
            &kernels::KERNEL_NAMES,
        ),
        ("drm", kernels::compile_drm, &kernels::DRM_KERNEL_NAMES),
    ];
    for (unit, compile, names) in units {
        for arch in ["compute_75", "compute_80", "compute_90"] {
            let ptx = compile(arch).unwrap_or_else(|e| panic!("{unit} {arch}: {e}"));
            let text = ptx.to_src();
            // GMP_PTX_OUT=<folder> keeps the PTX (e.g. for `ptxas -arch=sm_90 -v`).
            if let Ok(dir) = std::env::var("GMP_PTX_OUT") {
                let _ = std::fs::write(format!("{dir}/{unit}_{arch}.ptx"), &text);
            }
            let rrtc: &[&str] = if unit == "collision" {
                &kernels::RRTC_KERNEL_NAMES
            } else {
                &[]
            };
            for k in names.iter().chain(rrtc) {
                assert!(
                    text.contains(&format!(".entry {k}(")),
                    "{unit} {arch}: kernel {k} missing from the PTX"
                );
            }
            // The twins must not contain fused multiply-adds (bit-identical to the CPU).
            assert!(
                !text.contains("fma.rn.f32"),
                "{unit} {arch}: the PTX contains fma.rn.f32; the kernels must be built with --fmad=false"
            );
        }
    }
    // Every source file on its own (headers compile as an empty translation unit).
    for (name, _) in kernels::SOURCES {
        let unit = kernels::source_unit(name).unwrap_or_else(|| panic!("{name}: no unit"));
        kernels::compile(&unit, "compute_90").unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // A syntax error comes back as an error value carrying NVRTC's log.
    let err = kernels::compile("extern \"C\" __global__ void broken( {", "compute_90")
        .expect_err("broken source must not compile");
    assert!(
        err.contains("NVRTC"),
        "error should carry the NVRTC log: {err}"
    );
    eprintln!("nvrtc: every kernel compiles for compute_75/80/90");
}

/// Random configurations for a planning group: uniform in the joint limits, or perturbations
/// (of a few scales) of given anchor configurations (problem starts and goals), clamped into
/// the limits, so that many land near contact.
struct Sampler<'a> {
    lower: &'a [f64],
    upper: &'a [f64],
    anchors: Vec<Vec<f64>>,
    rng: ChaCha8Rng,
}

impl Sampler<'_> {
    fn uniform(&mut self) -> Vec<f64> {
        (0..self.lower.len())
            .map(|j| self.rng.random_range(self.lower[j]..=self.upper[j]))
            .collect()
    }

    fn perturb(&mut self, base: &[f64], scale: f64) -> Vec<f64> {
        (0..base.len())
            .map(|j| {
                let n: f64 = (0..4)
                    .map(|_| self.rng.random_range(-1.0..1.0))
                    .sum::<f64>()
                    * 0.5;
                (base[j] + n * scale).clamp(self.lower[j], self.upper[j])
            })
            .collect()
    }

    fn config(&mut self) -> Vec<f64> {
        if self.anchors.is_empty() || self.rng.random_bool(0.4) {
            return self.uniform();
        }
        let a = self.anchors[self.rng.random_range(0..self.anchors.len())].clone();
        let scale = [0.02, 0.1, 0.3, 0.8][self.rng.random_range(0..4)];
        self.perturb(&a, scale)
    }

    fn motion(&mut self) -> (Vec<f64>, Vec<f64>) {
        let a = self.config();
        let b = match self.rng.random_range(0..4) {
            0 => self.uniform(),
            1 => self.config(),
            _ => self.perturb(&a, 0.4),
        };
        (a, b)
    }
}

const PARITY_RESOLUTION: f64 = 0.03;

#[derive(Default)]
struct Tally {
    configs: usize,
    config_free: usize,
    motions: usize,
    motion_free: usize,
    /// Verdicts differing from the CPU, per GPU run ("generic configs", "specialised balanced
    /// motions", ...), in the order first seen.
    diffs: Vec<(String, usize)>,
    examples: Vec<String>,
}

impl Tally {
    fn add(&mut self, run: &str, n: usize) {
        match self.diffs.iter_mut().find(|(r, _)| r == run) {
            Some((_, d)) => *d += n,
            None => self.diffs.push((run.to_string(), n)),
        }
    }

    /// Compares the GPU verdicts of one run with the CPU's, keeping a few examples.
    fn record(
        &mut self,
        run: &str,
        cpu: &[bool],
        gpu: &[bool],
        describe: impl Fn(usize) -> String,
    ) {
        assert_eq!(cpu.len(), gpu.len(), "{run}: verdict count");
        let mut diffs = 0;
        for i in 0..cpu.len() {
            if cpu[i] != gpu[i] {
                diffs += 1;
                if self.examples.len() < 5 {
                    self.examples.push(format!(
                        "{}: cpu {} cuda {} ({run})",
                        describe(i),
                        cpu[i],
                        gpu[i]
                    ));
                }
            }
        }
        self.add(run, diffs);
    }

    fn total_diff(&self) -> usize {
        self.diffs.iter().map(|(_, d)| d).sum()
    }

    /// `generic configs 0, specialised configs 0, ...`
    fn per_run(&self) -> String {
        self.diffs
            .iter()
            .map(|(r, d)| format!("{r} {d}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The motion kernels to compare: all, or those `GMP_PARITY_MOTION_KERNEL` names (a comma
/// list of `naive`, `balanced`, `tiled`, to shorten long runs).
fn motion_kernels() -> Vec<MotionKernel> {
    match std::env::var("GMP_PARITY_MOTION_KERNEL") {
        Ok(k) if !k.trim().is_empty() => MotionKernel::ALL
            .into_iter()
            .filter(|m| k.split(',').any(|n| n.trim() == m.name()))
            .collect(),
        _ => MotionKernel::ALL.to_vec(),
    }
}

/// The kernel variants a parity run must cover: both, unless the specialised kernels were
/// turned off on purpose (GMP_CUDA_KERNEL=generic). A checker without specialised kernels fails
/// the test otherwise (it would compare the generic kernels twice).
fn variants(cuda: &CudaChecker) -> Vec<KernelVariant> {
    if std::env::var(gpu::KERNEL_ENV).is_ok_and(|v| v.trim() == "generic") {
        return vec![KernelVariant::Generic];
    }
    assert!(
        cuda.specialisation().is_some(),
        "the specialised kernels are missing: {}",
        cuda.specialisation_unavailable().unwrap_or("?")
    );
    let all = vec![KernelVariant::Generic, KernelVariant::Specialised];
    // GMP_PARITY_VARIANTS=specialised (or generic) compares one, to fit a run under
    // compute-sanitizer into a device call.
    match std::env::var("GMP_PARITY_VARIANTS") {
        Ok(v) if !v.trim().is_empty() => all
            .into_iter()
            .filter(|k| v.split(',').any(|n| n.trim() == variant_name(*k)))
            .collect(),
        _ => all,
    }
}

/// The name of a kernel variant in `GMP_PARITY_VARIANTS`.
fn variant_name(k: KernelVariant) -> &'static str {
    match k {
        KernelVariant::Generic => "generic",
        KernelVariant::Specialised => "specialised",
    }
}

/// The checkers with the specialised kernels in the layouts the default one does not use (every
/// layout must give the CPU's verdicts; `GMP_PARITY_LAYOUTS`, a comma-separated list of layout
/// names such as `grouped-fold`, restricts them), empty when the specialised kernels are off.
fn other_layouts(
    r: &gpu_motion_planner::mbm::MbmRobot,
    base: &[f64],
    scene: &gpu_motion_planner::scene::Scene,
    opts: CheckerOptions,
    main: &CudaChecker,
) -> Vec<CudaChecker> {
    let Some(used) = main
        .specialisation()
        .and_then(|st| Layout::parse(&st.layout))
    else {
        return Vec::new();
    };
    let wanted: Option<Vec<Layout>> = std::env::var("GMP_PARITY_LAYOUTS").ok().map(|v| {
        v.split(',')
            .filter(|n| !n.trim().is_empty())
            .map(|n| Layout::parse(n).unwrap_or_else(|| panic!("GMP_PARITY_LAYOUTS: '{n}'")))
            .collect()
    });
    Layout::ALL
        .into_iter()
        .filter(|&l| l != used && wanted.as_ref().is_none_or(|w| w.contains(&l)))
        .map(|other| {
            let cuda = CudaOptions {
                spec_layout: Some(other),
                ..CudaOptions::from_env()
            };
            let c = CudaChecker::with_options(&r.model, &r.group, base, scene, opts, cuda)
                .expect("cuda checker (other layout)");
            assert!(
                c.specialisation().is_some(),
                "the specialised kernels ({other:?}) are missing: {}",
                c.specialisation_unavailable().unwrap_or("?")
            );
            c
        })
        .collect()
}

/// Compares the CPU with every kernel variant of `cudas[0]` and with the specialised kernels of
/// the others (other builds), on the same batches.
fn compare(
    cpu: &CpuChecker,
    cudas: &mut [CudaChecker],
    s: &mut Sampler,
    n_cfg: usize,
    n_mot: usize,
    t: &mut Tally,
    what: &str,
) {
    let dof = cpu.space().dof();
    let mut batch = ConfigBatch::with_capacity(dof, n_cfg);
    for _ in 0..n_cfg {
        batch.push(&s.config()).unwrap();
    }
    // GMP_PARITY_TIMINGS=1: a line per run with its wall time (where a long run goes).
    let timings = std::env::var("GMP_PARITY_TIMINGS").is_ok_and(|v| v.trim() == "1");
    let clock = std::time::Instant::now();
    let lap = |label: &str, since: &mut std::time::Instant| {
        if timings {
            eprintln!(
                "parity timing: {what} {label}: {:.1} ms",
                since.elapsed().as_secs_f64() * 1e3
            );
        }
        *since = std::time::Instant::now();
    };
    let mut since = clock;
    let vc = cpu.check_configs(&batch).expect("cpu configs");
    lap("cpu configs", &mut since);
    let mut motions = MotionBatch::new(dof);
    for _ in 0..n_mot {
        let (a, b) = s.motion();
        motions.push(&a, &b).unwrap();
    }
    let mc = cpu
        .check_motions(&motions, PARITY_RESOLUTION)
        .expect("cpu motions");
    lap("cpu motions", &mut since);
    let mut runs = Vec::new();
    for (ci, c) in cudas.iter().enumerate() {
        if ci == 0 {
            runs.extend(
                variants(c)
                    .into_iter()
                    .map(|v| (0, v, v.name().to_string())),
            );
        } else if let Some(st) = c.specialisation() {
            runs.push((
                ci,
                KernelVariant::Specialised,
                format!("specialised-{}", st.layout),
            ));
        }
    }
    for (ci, variant, label) in runs {
        let cuda = &mut cudas[ci];
        cuda.set_kernel_variant(variant).expect("kernel variant");
        let vg = cuda.check_configs(&batch).expect("cuda configs");
        lap(&format!("{label} configs"), &mut since);
        t.record(&format!("{label} configs"), &vc, &vg, |i| {
            format!("{what} config {:?}", batch.row(i))
        });
        for kernel in motion_kernels() {
            cuda.set_motion_kernel(kernel);
            let mg = cuda
                .check_motions(&motions, PARITY_RESOLUTION)
                .expect("cuda motions");
            let run = format!("{label} {} motions", kernel.name());
            lap(&run, &mut since);
            t.record(&run, &mc, &mg, |i| {
                format!(
                    "{what} motion {:?} -> {:?}",
                    motions.from.row(i),
                    motions.to.row(i)
                )
            });
        }
    }
    for c in cudas.iter_mut() {
        c.set_motion_kernel(MotionKernel::DEFAULT);
    }
    t.configs += vc.len();
    t.config_free += vc.iter().filter(|&&v| v).count();
    t.motions += mc.len();
    t.motion_free += mc.iter().filter(|&&v| v).count();
}

/// Parity on one MBM robot over problems spread across all seven scenes.
fn parity_robot(robot: &str, shapes: RobotShapes, n_cfg: usize, n_mot: usize) -> Tally {
    parity_robot_with(robot, shapes, None, n_cfg, n_mot)
}

/// [`parity_robot`], with the sphere model fitted by `fit` (`gmp spherize`) in place of the
/// spherized URDF where `fit` is given.
fn parity_robot_with(
    robot: &str,
    shapes: RobotShapes,
    fit: Option<SphereFit>,
    n_cfg: usize,
    n_mot: usize,
) -> Tally {
    let data = common::mbm_or_skip("gpu parity").expect("MBM data");
    let mut r = gpu_motion_planner::mbm::load_robot(&data, robot).expect("robot loads");
    if let Some(fit) = &fit {
        r.model.spherized = Some(fit_robot(&r.model, fit));
    }
    let problems = gpu_motion_planner::mbm::load_problems(&data, robot).expect("problems load");
    // Two problems of each scene kind (`GMP_PARITY_INDICES`, comma-separated problem numbers,
    // default "1,50", picks others: a run under compute-sanitizer does one index per device call).
    let indices: Vec<usize> = std::env::var("GMP_PARITY_INDICES")
        .unwrap_or_else(|_| "1,50".into())
        .split(',')
        .filter(|v| !v.trim().is_empty())
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("GMP_PARITY_INDICES: '{v}' is not a problem number"))
        })
        .collect();
    let picked: Vec<_> = problems
        .iter()
        .filter(|p| indices.contains(&p.index))
        .collect();
    assert!(
        !picked.is_empty(),
        "GMP_PARITY_INDICES {indices:?} picks no {robot} problem"
    );
    let anchors: Vec<Vec<f64>> = picked
        .iter()
        .flat_map(|p| {
            let (a, b) = r.start_goal(p).expect("start and goal");
            [a, b]
        })
        .collect();
    let space = &r.group.space;
    let mut s = Sampler {
        lower: &space.lower,
        upper: &space.upper,
        anchors,
        rng: ChaCha8Rng::seed_from_u64(0x6d70_0000 + robot.len() as u64),
    };
    let opts = CheckerOptions {
        shapes,
        ..Default::default()
    };
    let mut t = Tally::default();
    let per_cfg = n_cfg.div_ceil(picked.len());
    let per_mot = n_mot.div_ceil(picked.len());
    for p in &picked {
        let base = r.start_full_state(p);
        let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu checker");
        let cuda =
            CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cuda checker");
        let other = other_layouts(&r, &base, &p.scene, opts, &cuda);
        let mut cudas: Vec<CudaChecker> = std::iter::once(cuda).chain(other).collect();
        let what = format!("{robot}/{}#{}", p.scene_name, p.index);
        compare(&cpu, &mut cudas, &mut s, per_cfg, per_mot, &mut t, &what);
    }
    eprintln!(
        "parity: {robot} configs {} diff {}, motions {} diff {} ({:?}; free configs {:.1}%, free motions {:.1}%; {})",
        t.configs,
        t.diffs
            .iter()
            .filter(|(r, _)| r.ends_with(" configs"))
            .map(|(_, d)| d)
            .sum::<usize>(),
        t.motions,
        t.diffs
            .iter()
            .filter(|(r, _)| r.ends_with(" motions"))
            .map(|(_, d)| d)
            .sum::<usize>(),
        shapes,
        100.0 * t.config_free as f64 / t.configs.max(1) as f64,
        100.0 * t.motion_free as f64 / t.motions.max(1) as f64,
        t.per_run(),
    );
    t
}

fn assert_parity(robot: &str) {
    if !common::gpu_or_skip(&format!("gpu_parity_{robot}"))
        || common::mbm_or_skip("gpu parity").is_none()
    {
        return;
    }
    let n_cfg = common::env_usize("GMP_PARITY_CONFIGS", 20_000);
    let n_mot = common::env_usize("GMP_PARITY_MOTIONS", 2_000);
    let mut examples = Vec::new();
    let mut bad = 0;
    // The exact polytope model at full size, the sphere model at a quarter
    // (GMP_PARITY_SPHERE_DIVISOR, default 4); GMP_PARITY_SHAPES=polytopes|spheres runs one.
    let only = std::env::var("GMP_PARITY_SHAPES").unwrap_or_default();
    let divisor = common::env_usize("GMP_PARITY_SPHERE_DIVISOR", 4).max(1);
    for (shapes, c, m) in [
        (RobotShapes::Polytopes, n_cfg, n_mot),
        (RobotShapes::Spheres, n_cfg / divisor, n_mot / divisor),
    ] {
        let name = format!("{shapes:?}").to_lowercase();
        if !only.trim().is_empty() && only.trim() != name {
            eprintln!("parity: {robot} {name} left out (GMP_PARITY_SHAPES={only})");
            continue;
        }
        let t = parity_robot(robot, shapes, c, m);
        bad += t.total_diff();
        examples.extend(t.examples);
    }
    assert_eq!(
        bad, 0,
        "{robot}: CUDA verdicts differ from the CPU: {examples:#?}"
    );
}

#[test]
fn gpu_parity_panda() {
    assert_parity("panda");
}

#[test]
fn gpu_parity_ur5() {
    assert_parity("ur5");
}

#[test]
fn gpu_parity_fetch() {
    assert_parity("fetch");
}

/// Sphere models fitted to the collision meshes (`gmp spherize`, hundreds of spheres where the
/// spherized URDFs have 40-112): the kernels generated for them give the CPU's verdicts.
#[test]
fn gpu_parity_fitted_spheres() {
    if !common::gpu_or_skip("gpu_parity_fitted_spheres")
        || common::mbm_or_skip("gpu parity").is_none()
    {
        return;
    }
    let divisor = common::env_usize("GMP_PARITY_SPHERE_DIVISOR", 4).max(1);
    let n_cfg = common::env_usize("GMP_PARITY_CONFIGS", 20_000) / divisor;
    let n_mot = common::env_usize("GMP_PARITY_MOTIONS", 2_000) / divisor;
    let mut bad = 0;
    let mut examples = Vec::new();
    // The default fit only: NVRTC takes about 100 s for Panda's (150 spheres, 580 KiB of
    // generated code, H100 machine, 2026-11-27); run with GMP_PARITY_LAYOUTS= (empty) to
    // compile only the layout the model picks.
    for (robot, fit) in [
        ("panda", SphereFit::default()),
        ("fetch", SphereFit::default()),
    ] {
        let t = parity_robot_with(robot, RobotShapes::Spheres, Some(fit), n_cfg, n_mot);
        bad += t.total_diff();
        examples.extend(t.examples);
    }
    assert_eq!(
        bad, 0,
        "fitted spheres: CUDA verdicts differ from the CPU: {examples:#?}"
    );
}

/// The MBM Panda, the first problem of `scene` and its base state, with a sampler of
/// configurations around that problem's start and goal.
fn panda_problem(
    data: &std::path::Path,
    scene: &str,
) -> (
    gpu_motion_planner::mbm::MbmRobot,
    gpu_motion_planner::mbm::Problem,
    Vec<f64>,
) {
    let r = gpu_motion_planner::mbm::load_robot(data, "panda").expect("panda");
    let problems = gpu_motion_planner::mbm::load_problems(data, "panda").expect("problems");
    let p = problems
        .into_iter()
        .find(|p| p.scene_name == scene)
        .unwrap_or_else(|| panic!("a {scene} problem"));
    let base = r.start_full_state(&p);
    (r, p, base)
}

/// A sampler around the start and goal of `p`.
fn sampler_for<'a>(
    r: &'a gpu_motion_planner::mbm::MbmRobot,
    p: &gpu_motion_planner::mbm::Problem,
    seed: u64,
) -> Sampler<'a> {
    let (a, b) = r.start_goal(p).expect("start and goal");
    Sampler {
        lower: &r.group.space.lower,
        upper: &r.group.space.upper,
        anchors: vec![a, b],
        rng: ChaCha8Rng::seed_from_u64(seed),
    }
}

/// Batches large enough to go through the device in pipelined pieces (several pieces, the
/// buffer ring wrapping around), f64 and f32 input, both models, every kernel variant: the
/// same verdicts as the CPU, in the same order.
#[test]
fn gpu_parity_pipelined_batches() {
    if !common::gpu_or_skip("gpu_parity_pipelined_batches") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_pipelined_batches") else {
        return;
    };
    let n = common::env_usize("GMP_PARITY_PIPELINE_CONFIGS", 700_001);
    let (r, p, base) = panda_problem(&data, "cage");
    let space = &r.group.space;
    let mut s = sampler_for(&r, &p, 0x7069_7065);
    let dof = space.dof();
    let mut batch = ConfigBatch::with_capacity(dof, n);
    for _ in 0..n {
        batch.push(&s.config()).unwrap();
    }
    let f32s: Vec<f32> = batch.values().iter().map(|&v| v as f32).collect();
    let mut t = Tally::default();
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let opts = CheckerOptions {
            shapes,
            ..Default::default()
        };
        let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu");
        let vc = cpu.check_configs(&batch).expect("cpu configs");
        let mut cuda = CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cuda");
        for v in variants(&cuda) {
            cuda.set_kernel_variant(v).expect("variant");
            let vg = cuda.check_configs(&batch).expect("cuda configs");
            let launches = cuda.last_timings().launches;
            assert!(
                launches >= 2,
                "{n} configurations went in {launches} piece(s)"
            );
            t.record(&format!("{shapes:?} {} f64", v.name()), &vc, &vg, |i| {
                format!("config {:?}", batch.row(i))
            });
            let vf = cuda.check_configs_f32(&f32s).expect("cuda f32 configs");
            t.record(&format!("{shapes:?} {} f32", v.name()), &vc, &vf, |i| {
                format!("config {:?}", batch.row(i))
            });
        }
        t.configs += vc.len();
        t.config_free += vc.iter().filter(|&&v| v).count();
    }
    eprintln!(
        "parity: pipelined batches of {n} configs ({} checked, {:.1}% free): diff {} ({})",
        t.configs,
        100.0 * t.config_free as f64 / t.configs.max(1) as f64,
        t.total_diff(),
        t.per_run()
    );
    assert_eq!(t.total_diff(), 0, "{:#?}", t.examples);
}

#[test]
fn gpu_parity_after_scene_updates() {
    if !common::gpu_or_skip("gpu_parity_after_scene_updates") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_after_scene_updates") else {
        return;
    };
    let (r, p, base) = panda_problem(&data, "bookshelf_small");
    // Both models: the sphere model's specialised kernels read the scene's proximity grid
    // (with GMP_PROX_MIN=1 at every batch size), which every update makes stale.
    let mut t = Tally::default();
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let opts = CheckerOptions {
            shapes,
            ..CheckerOptions::default()
        };
        scene_updates_with(&r, &p, &base, opts, &mut t);
    }
    eprintln!(
        "parity: scene updates configs {} motions {} diff {} ({})",
        t.configs,
        t.motions,
        t.total_diff(),
        t.per_run()
    );
    assert_eq!(t.total_diff(), 0, "{:#?}", t.examples);
}

/// Where the checker's specialised kernels read a proximity grid and `GMP_PROX_MIN=1` asks for
/// one at every batch: that one describes the current scene (asserted after each comparison).
fn grid_in_use(cuda: &CudaChecker, what: &str) {
    let forced = std::env::var("GMP_PROX_MIN").is_ok_and(|v| v.trim() == "1");
    let reads = cuda.specialisation().is_some_and(|s| s.prox_covers > 0);
    let grid = cuda.proximity_grid();
    eprintln!(
        "parity: {what}: proximity grid {}",
        grid.as_ref().map_or("none".to_string(), |g| format!(
            "{:?} cells of {:.3} m, always {:#x}",
            g.dim,
            g.cell_size(),
            g.always
        ))
    );
    if forced && reads {
        assert!(
            grid.is_some(),
            "{what}: no proximity grid for the current scene"
        );
    }
}

fn scene_updates_with(
    r: &gpu_motion_planner::mbm::MbmRobot,
    p: &gpu_motion_planner::mbm::Problem,
    base: &[f64],
    opts: CheckerOptions,
    t: &mut Tally,
) {
    use gpu_motion_planner::scene::{Obstacle, Shape};
    use nalgebra::{Isometry3, Translation3, Vector3};
    let mut s = sampler_for(r, p, 7);
    let mut scene = p.scene.clone();
    let mut cpu = CpuChecker::new(&r.model, &r.group, base, &scene, opts).unwrap();
    let mut cuda = [CudaChecker::new(&r.model, &r.group, base, &scene, opts).unwrap()];
    compare(&cpu, &mut cuda, &mut s, 5000, 300, t, "initial");
    grid_in_use(&cuda[0], "initial");

    let ids: Vec<String> = scene.iter().map(|o| o.id.clone()).collect();
    // Move one obstacle towards the robot, remove another.
    let first = scene.get(&ids[0]).unwrap().pose;
    scene
        .set_pose(&ids[0], Translation3::new(-0.1, 0.05, 0.0) * first)
        .unwrap();
    if ids.len() > 1 {
        scene.remove(&ids[1]).unwrap();
    }
    // Add a box and a convex mesh in the workspace.
    scene
        .add(Obstacle {
            id: "added_box".into(),
            shape: Shape::Box {
                half_extents: Vector3::new(0.1, 0.15, 0.05),
            },
            pose: Isometry3::translation(0.45, 0.0, 0.5),
        })
        .unwrap();
    scene
        .add(Obstacle {
            id: "added_mesh".into(),
            shape: Shape::ConvexMesh {
                polytope: common::small_mesh(),
            },
            pose: Isometry3::translation(0.3, -0.35, 0.35),
        })
        .unwrap();
    let changed_cpu = cpu.sync_scene(&scene);
    let changed_gpu = cuda[0].sync_scene(&scene).expect("sync");
    assert_eq!(changed_cpu, changed_gpu);
    assert!(!changed_gpu.is_empty());
    assert!(cuda[0].proximity_grid().is_none(), "a stale grid in use");
    compare(&cpu, &mut cuda, &mut s, 5000, 300, t, "after update 1");
    grid_in_use(&cuda[0], "after update 1");

    // Move the mesh, remove the added box.
    scene
        .set_pose("added_mesh", Isometry3::translation(0.35, 0.3, 0.4))
        .unwrap();
    scene.remove("added_box").unwrap();
    cpu.sync_scene(&scene);
    cuda[0].sync_scene(&scene).expect("sync");
    compare(&cpu, &mut cuda, &mut s, 5000, 300, t, "after update 2");
    grid_in_use(&cuda[0], "after update 2");
    // A new base state (the fingers) goes to the device too.
    let mut base2 = base.to_vec();
    for v in base2.iter_mut() {
        *v += 0.01;
    }
    cpu.set_base_state(&base2).unwrap();
    cuda[0].set_base_state(&base2).unwrap();
    compare(&cpu, &mut cuda, &mut s, 5000, 300, t, "after base state");
}

#[test]
fn gpu_parity_drm_rgg_labels() {
    if !common::gpu_or_skip("gpu_parity_drm_rgg_labels") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_drm_rgg_labels") else {
        return;
    };
    let panda = gpu_motion_planner::mbm::load_robot(&data, "panda").expect("panda loads");
    let (robot, group) = (&panda.model, &panda.group);
    let base = robot.tree.neutral_state();
    let opts = DynamicRoadmapOptions {
        resolution: 0.05,
        drm_cell_size: None,
        boxes_per_body: 2,
        inner_spheres_per_body: 3,
        ..Default::default()
    };
    let vertices = common::env_usize("GMP_PARITY_DRM_VERTICES", 800);
    let mut cpu = DynamicRoadmap::sample(robot, group, &base, vertices, 8, 7, opts.clone())
        .expect("CPU build");
    let gpu_opts = DynamicRoadmapOptions { gpu: true, ..opts };
    let mut cuda =
        DynamicRoadmap::sample(robot, group, &base, vertices, 8, 7, gpu_opts).expect("GPU build");
    assert_eq!(
        cuda.rgg_engine(),
        RggEngine::Cuda,
        "the GPU build uses the CUDA engine"
    );
    // The self-collision check of the build ran on the CUDA checker: same labels.
    assert_eq!(cpu.labels(LabelMethod::Rgg), cuda.labels(LabelMethod::Rgg));
    let edges = cpu.roadmap().num_edges();
    // Verdicts of single obstacles, all three engines.
    let n = common::env_usize("GMP_PARITY_DRM_OBSTACLES", 3000);
    let (lo, hi) = ([-0.8, -0.8, -0.1], [0.8, 0.8, 1.2]);
    let mut rng = ChaCha8Rng::seed_from_u64(0xd4a);
    let (mut diff, mut listed, mut invalid) = (0usize, 0usize, 0usize);
    let mut examples = Vec::new();
    for i in 0..n {
        let o = Obstacle {
            id: "o".into(),
            shape: common::random_shape(&mut rng, 0.5),
            pose: common::random_pose(&mut rng, lo, hi),
        };
        let c = cuda
            .rgg_verdicts(&o, RggEngine::Cuda)
            .expect("CUDA verdicts");
        let b = cuda
            .rgg_verdicts(&o, RggEngine::BruteForce)
            .expect("brute force");
        let h = cuda.rgg_verdicts(&o, RggEngine::Bvh).expect("BVH");
        if c != b || h != b {
            diff += 1;
            if examples.len() < 5 {
                let first = c.iter().zip(&b).position(|(x, y)| x != y);
                examples.push(format!(
                    "placement {i} {o:?}: listed cuda {} brute force {} bvh {}, first difference at {first:?}",
                    c.len(),
                    b.len(),
                    h.len()
                ));
            }
        }
        listed += b.len();
        invalid += b.iter().filter(|(_, l)| *l == EdgeLabel::Invalid).count();
    }
    // Scene updates (adds, moves, replacements, removals) on both roadmaps.
    let mut scene = Scene::default();
    let steps = 200;
    let mut update_diff = 0;
    for step in 0..steps {
        let id = format!("o{}", step % 3);
        if step % 7 == 6 && scene.get(&id).is_some() {
            scene.remove(&id).expect("remove");
        } else {
            scene
                .upsert(Obstacle {
                    id,
                    shape: common::random_shape(&mut rng, 0.5),
                    pose: common::random_pose(&mut rng, lo, hi),
                })
                .expect("upsert");
        }
        cpu.update(&scene).expect("CPU update");
        cuda.update(&scene).expect("CUDA update");
        assert_eq!(
            cuda.rgg_engine(),
            RggEngine::Cuda,
            "step {step}: fell back to the CPU"
        );
        if cpu.labels(LabelMethod::Rgg) != cuda.labels(LabelMethod::Rgg) {
            update_diff += 1;
        }
    }
    eprintln!(
        "parity: drm rgg on {} ({edges} edges): placements {n} diff {diff} (per placement {:.1} listed, {:.1} invalid), updates {steps} diff {update_diff}",
        cuda.cuda_device().unwrap_or("?"),
        listed as f64 / n.max(1) as f64,
        invalid as f64 / n.max(1) as f64,
    );
    assert!(
        listed > 0 && invalid > 0,
        "the placements never touch the roadmap"
    );
    assert_eq!(
        diff + update_diff,
        0,
        "CUDA RGG verdicts differ: {examples:#?}"
    );
}

#[test]
fn gpu_parity_drm_fk_frames_panda() {
    if !common::gpu_or_skip("gpu_parity_drm_fk_frames_panda") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_drm_fk_frames_panda") else {
        return;
    };
    let r = gpu_motion_planner::mbm::load_robot(&data, "panda").expect("panda loads");
    let problems = gpu_motion_planner::mbm::load_problems(&data, "panda").expect("problems");
    // A base state from a problem (the fingers are outside the group).
    let base = problems
        .first()
        .map(|p| r.start_full_state(p))
        .unwrap_or_else(|| r.model.tree.neutral_state());
    let generic = CudaOptions {
        specialise: false,
        ..CudaOptions::default()
    };
    let cuda = CudaChecker::with_options(
        &r.model,
        &r.group,
        &base,
        &Scene::default(),
        CheckerOptions::default(),
        generic,
    )
    .expect("cuda checker");
    let model = cuda.model();
    let (dof, nf) = (model.dof(), model.frames.len());
    assert!(nf >= dof && dof == 7, "{nf} frames, {dof} joints");
    // Uniform in the limits, and a quarter far outside them (several turns, to exercise the
    // range reduction of the sine and cosine).
    let n = common::env_usize("GMP_PARITY_FK_CONFIGS", 300_000);
    let space = &r.group.space;
    let mut rng = ChaCha8Rng::seed_from_u64(0xf4);
    let mut q = Vec::with_capacity(n * dof);
    for i in 0..n {
        for j in 0..dof {
            let v = if i % 4 == 3 {
                rng.random_range(-20.0..20.0)
            } else {
                rng.random_range(space.lower[j]..=space.upper[j])
            };
            q.push(v as f32);
        }
    }
    let t = std::time::Instant::now();
    let gpu_frames = cuda.forward_kinematics(&q).expect("cuda fk");
    let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(gpu_frames.len(), n * nf);
    let t = std::time::Instant::now();
    let (mut state, mut frames) = (Vec::new(), Vec::new());
    let (mut diff, mut examples) = (0usize, Vec::new());
    for i in 0..n {
        // CpuChecker::fill_state: the base state with the group's joints set.
        state.clear();
        state.extend_from_slice(&model.base_state);
        for j in 0..dof {
            state[model.group_vars[j] as usize] = q[i * dof + j];
        }
        frame_poses(model, &state, &mut frames);
        for (f, (c, g)) in frames
            .iter()
            .zip(&gpu_frames[i * nf..(i + 1) * nf])
            .enumerate()
        {
            let same =
                c.r.iter()
                    .zip(&g.r)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
                    && c.t
                        .iter()
                        .zip(&g.t)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
            if !same {
                diff += 1;
                if examples.len() < 5 {
                    examples.push(format!(
                        "config {i} {:?} frame {f}: cpu {c:?} cuda {g:?}",
                        &q[i * dof..(i + 1) * dof]
                    ));
                }
            }
        }
    }
    let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
    // Bad input is an error value.
    assert!(matches!(
        cuda.forward_kinematics(&q[..dof + 1]),
        Err(CollisionError::WrongDof { .. })
    ));
    assert!(cuda.forward_kinematics(&[]).expect("empty").is_empty());
    eprintln!(
        "parity: drm fk frames panda on {}: {n} configs x {nf} frames, diff {diff} (cuda {gpu_ms:.1} ms with copies, cpu {cpu_ms:.1} ms)",
        cuda.device_names().first().map_or("?", |s| s.as_str())
    );
    assert_eq!(
        diff, 0,
        "GPU frame poses differ from the CPU: {examples:#?}"
    );
}

/// Builds `roadmap` with `opts` on the CPU and with the GPU and compares the voxel maps (and
/// the DRM labels after a few obstacle moves). Returns the number of map entries.
fn voxel_map_parity(
    what: &str,
    r: &gpu_motion_planner::mbm::MbmRobot,
    base: &[f64],
    roadmap: &gpu_motion_planner::roadmap::Roadmap,
    opts: DynamicRoadmapOptions,
) -> usize {
    let (robot, group) = (&r.model, &r.group);
    let mut cpu =
        DynamicRoadmap::new(robot, group, base, roadmap.clone(), opts.clone()).expect("CPU build");
    let gpu_opts = DynamicRoadmapOptions { gpu: true, ..opts };
    let mut cuda =
        DynamicRoadmap::new(robot, group, base, roadmap.clone(), gpu_opts).expect("GPU build");
    let (sc, sg) = (
        cpu.voxel_map_stats().expect("CPU map"),
        cuda.voxel_map_stats().expect("GPU map"),
    );
    assert_eq!(sc.engine, VoxelEngine::Cpu);
    assert_eq!(
        sg.engine,
        VoxelEngine::Cuda,
        "{what}: the GPU build fell back to the CPU"
    );
    let (mc, mg) = (
        cpu.voxel_map().expect("map"),
        cuda.voxel_map().expect("map"),
    );
    assert_eq!(mc.grid, mg.grid, "{what}: grids");
    assert_eq!(mc.offsets.len(), mg.offsets.len(), "{what}: cells");
    let mut cells_differing = 0;
    let mut first = None;
    for c in 0..mc.offsets.len().saturating_sub(1) {
        let a = &mc.edges[mc.offsets[c] as usize..mc.offsets[c + 1] as usize];
        let b = &mg.edges[mg.offsets[c] as usize..mg.offsets[c + 1] as usize];
        if a != b {
            cells_differing += 1;
            first.get_or_insert(format!(
                "cell {c}: cpu {} edges, cuda {} edges",
                a.len(),
                b.len()
            ));
        }
    }
    assert_eq!(
        cells_differing, 0,
        "{what}: {cells_differing} cells list other edges on the GPU, first {first:?}"
    );
    assert!(mc == mg, "{what}: the maps differ");
    let (dims, entries) = (mc.grid.dims, mc.edges.len());
    // The same maps give the same DRM labels as obstacles come and go.
    let mut rng = ChaCha8Rng::seed_from_u64(0xd0c);
    let mut scene = Scene::default();
    for step in 0..20 {
        scene
            .upsert(Obstacle {
                id: format!("o{}", step % 2),
                shape: common::random_shape(&mut rng, 0.5),
                pose: common::random_pose(&mut rng, [-0.6, -0.6, 0.0], [0.6, 0.6, 1.0]),
            })
            .expect("upsert");
        cpu.update(&scene).expect("CPU update");
        cuda.update(&scene).expect("GPU update");
        assert_eq!(
            cpu.labels(LabelMethod::Drm),
            cuda.labels(LabelMethod::Drm),
            "{what}: DRM labels after step {step}"
        );
    }
    let cu = sg.cuda.unwrap_or_default();
    eprintln!(
        "parity: drm voxel map {what}: {} edges, grid {:?}, {} entries, identical (build cpu {:.1} ms, gpu {:.1} ms: kernels {:.1} ms in {} chunks)",
        roadmap.num_edges(),
        dims,
        entries,
        sc.build_time.as_secs_f64() * 1e3,
        sg.build_time.as_secs_f64() * 1e3,
        cu.kernel_ms,
        cu.chunks
    );
    entries
}

#[test]
fn gpu_parity_drm_voxel_map_panda() {
    if !common::gpu_or_skip("gpu_parity_drm_voxel_map_panda") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_drm_voxel_map_panda") else {
        return;
    };
    let r = gpu_motion_planner::mbm::load_robot(&data, "panda").expect("panda loads");
    let base = r.model.tree.neutral_state();
    let empty = CpuChecker::new(
        &r.model,
        &r.group,
        &base,
        &Scene::default(),
        CheckerOptions::default(),
    )
    .expect("cpu checker");
    let vertices = common::env_usize("GMP_PARITY_DRM_VERTICES", 800);
    let (roadmap, _) = sample_roadmap(&empty, vertices, 8, 5).expect("roadmap");
    // The grid around every swept volume (from the sweep), 5 cm cells, DRM only.
    let derived = DynamicRoadmapOptions {
        resolution: 0.05,
        drm_cell_size: Some(0.05),
        rgg: false,
        plan_with: LabelMethod::Drm,
        ..Default::default()
    };
    let n1 = voxel_map_parity("panda derived bounds", &r, &base, &roadmap, derived.clone());
    // Given bounds smaller than the reach (border cells stand for the outside), 4 cm cells, at a
    // finer resolution, with the RGG approximations built too; half the roadmap.
    let (small, _) = sample_roadmap(&empty, vertices / 2, 6, 9).expect("roadmap");
    let fixed = DynamicRoadmapOptions {
        resolution: 0.03,
        drm_cell_size: Some(0.04),
        drm_bounds: Some(([-0.5, -0.6, 0.1], [0.7, 0.6, 1.1])),
        rgg: true,
        boxes_per_body: 2,
        inner_spheres_per_body: 2,
        ..derived
    };
    let n2 = voxel_map_parity("panda fixed bounds", &r, &base, &small, fixed);
    assert!(n1 > 0 && n2 > 0, "empty maps");
}

#[test]
fn cuda_backend_without_gpu_is_a_clean_error() {
    if gpu::gpu_available() {
        eprintln!("SKIP cuda_backend_without_gpu_is_a_clean_error: a GPU is present");
        return;
    }
    let robot = gpu_motion_planner::robot::RobotModel::from_urdf_file(
        &common::root().join("urdf/test_arm3.urdf"),
        None,
        &Default::default(),
    )
    .expect("test arm");
    let names: Vec<String> = ["joint1", "joint2", "joint3"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let group = robot.group_from_joints(&names).expect("group");
    let base = robot.tree.neutral_state();
    let scene = gpu_motion_planner::scene::Scene::new("world");
    let opts = CheckerOptions::default();
    let err =
        gpu_motion_planner::collision::make_checker("cuda", &robot, &group, &base, &scene, opts)
            .err()
            .expect("cuda without a GPU must fail");
    assert!(err.to_string().contains("no CUDA device"), "{err}");
    let auto =
        gpu_motion_planner::collision::make_checker("auto", &robot, &group, &base, &scene, opts)
            .expect("auto falls back to the CPU");
    assert_eq!(auto.backend(), gpu_motion_planner::collision::Backend::Cpu);
}

/// Shared launches (`gpu::hub::CudaBatch` behind a `LaunchHub`: the items of many scenes in one
/// launch, each checked in its own scene) against each scene's own CPU checker: problems 1 and
/// 50 of every scene (14 scenes at once), one client thread per scene, both collision models,
/// the specialised kernels behind two dispatchers and the generic ones behind one
/// (`GMP_PARITY_HUB_ROUNDS` rounds of 256
/// configurations and 64 motions per client, default 12).
#[test]
fn gpu_parity_shared_launches() {
    use gpu_motion_planner::collision::hub::BatchExecutor;
    use gpu_motion_planner::gpu::hub::CudaBatch;
    if !common::gpu_or_skip("gpu_parity_shared_launches") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_shared_launches") else {
        return;
    };
    let rounds = common::env_usize("GMP_PARITY_HUB_ROUNDS", 12);
    let mut total = (0, 0, 0);
    for robot in ["panda", "ur5", "fetch"] {
        let r = gpu_motion_planner::mbm::load_robot(&data, robot).expect("robot loads");
        let problems = gpu_motion_planner::mbm::load_problems(&data, robot).expect("problems");
        let picked: Vec<_> = problems
            .iter()
            .filter(|p| p.index == 1 || p.index == 50)
            .collect();
        let anchors: Vec<Vec<Vec<f64>>> = picked
            .iter()
            .map(|p| {
                let (a, b) = r.start_goal(p).expect("start and goal");
                vec![a, b]
            })
            .collect();
        let scenes: Vec<(Vec<f64>, &gpu_motion_planner::scene::Scene)> = picked
            .iter()
            .map(|p| (r.start_full_state(p), &p.scene))
            .collect();
        for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
            let opts = CheckerOptions {
                shapes,
                ..Default::default()
            };
            let cpus: Vec<CpuChecker> = scenes
                .iter()
                .map(|(base, scene)| {
                    CpuChecker::new(&r.model, &r.group, base, scene, opts).expect("cpu checker")
                })
                .collect();
            let generic = CudaOptions {
                specialise: false,
                ..CudaOptions::default()
            };
            // The specialised kernels behind two dispatchers (two streams on the device),
            // the generic ones behind one.
            for (cuda, executors) in [(CudaOptions::from_env(), 2), (generic, 1)] {
                let mut execs: Vec<Box<dyn BatchExecutor>> = Vec::new();
                let mut variant = KernelVariant::Generic;
                for _ in 0..executors {
                    let exec = CudaBatch::new(&r.model, &r.group, &scenes, opts, cuda, 0)
                        .expect("shared-launch executor");
                    variant = exec.kernel_variant();
                    assert_eq!(exec.scenes(), picked.len());
                    execs.push(Box::new(exec));
                }
                if cuda.specialise && std::env::var(gpu::KERNEL_ENV).is_err() {
                    assert_eq!(variant, KernelVariant::Specialised, "{robot} {shapes:?}");
                }
                let (c, m, d, f) = common::hub_parity(execs, &cpus, &anchors, rounds, 256);
                eprintln!(
                    "parity: shared launches {robot} {shapes:?} {} ({executors} executors): configs {c} motions {m} diff {d} (free configs {:.1}%)",
                    variant.name(),
                    100.0 * f as f64 / c.max(1) as f64
                );
                assert_eq!(
                    d,
                    0,
                    "{robot} {shapes:?} {}: shared launches differ from the CPU",
                    variant.name()
                );
                total = (total.0 + c, total.1 + m, total.2 + d);
            }
        }
    }
    eprintln!(
        "parity: shared launches all robots: configs {} motions {} diff {}",
        total.0, total.1, total.2
    );
}

/// Callers on several threads sharing one CUDA checker (parallel planning attempts, concurrent
/// service calls): their small batches are combined into shared launches
/// (`gpu::COMBINE_MAX_ITEMS`), and every caller still gets the CPU's verdicts for its own batch,
/// in its own order. Panda, both models, threads x rounds of configuration and motion batches
/// of planner size (`GMP_PARITY_COMBINE_ROUNDS`, default 40 per thread).
#[test]
fn gpu_parity_concurrent_callers() {
    if !common::gpu_or_skip("gpu_parity_concurrent_callers") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_concurrent_callers") else {
        return;
    };
    let rounds = common::env_usize("GMP_PARITY_COMBINE_ROUNDS", 40);
    let threads = 8;
    let (r, p, base) = panda_problem(&data, "bookshelf_small");
    let dof = r.group.space.dof();
    for shapes in [RobotShapes::Polytopes, RobotShapes::Spheres] {
        let opts = CheckerOptions {
            shapes,
            ..Default::default()
        };
        let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu");
        let cuda = CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cuda");
        let (diffs, items) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|k| {
                    let (r, p, cpu, cuda) = (&r, &p, &cpu, &cuda);
                    s.spawn(move || {
                        let mut smp = sampler_for(r, p, 0xc0b1 + k as u64);
                        let (mut diffs, mut items) = (0usize, 0usize);
                        for round in 0..rounds {
                            // Sizes vary per thread and round, as a planner's do.
                            let n = 1 + (k * 7 + round * 13) % 64;
                            let mut batch = ConfigBatch::with_capacity(dof, n);
                            for _ in 0..n {
                                batch.push(&smp.config()).expect("config");
                            }
                            let vc = cpu.check_configs(&batch).expect("cpu configs");
                            let vg = cuda.check_configs(&batch).expect("cuda configs");
                            diffs += vc.iter().zip(&vg).filter(|(a, b)| a != b).count();
                            diffs += vc.len().abs_diff(vg.len());
                            items += n;
                            let m = 1 + (k * 5 + round * 3) % 16;
                            let mut motions = MotionBatch::new(dof);
                            for _ in 0..m {
                                let (a, b) = smp.motion();
                                motions.push(&a, &b).expect("motion");
                            }
                            let mc = cpu.check_motions(&motions, 0.02).expect("cpu motions");
                            let mg = cuda.check_motions(&motions, 0.02).expect("cuda motions");
                            diffs += mc.iter().zip(&mg).filter(|(a, b)| a != b).count();
                            diffs += mc.len().abs_diff(mg.len());
                            items += m;
                        }
                        (diffs, items)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("caller thread"))
                .fold((0, 0), |(d, i), (a, b)| (d + a, i + b))
        });
        let (cfg, mot) = cuda.combine_stats();
        eprintln!(
            "parity: concurrent callers, panda {shapes:?}: {items} items from {threads} threads, diff {diffs}; configuration requests {} in {} launches, motion rounds {} in {} launches",
            cfg.requests, cfg.batches, mot.requests, mot.batches
        );
        assert_eq!(diffs, 0, "verdicts differ from the CPU's");
        assert_eq!(
            cfg.requests,
            (threads * rounds) as u64,
            "every configuration request went through the combining"
        );
        assert!(
            cfg.batches < cfg.requests && mot.batches < mot.requests,
            "{threads} threads calling at once never shared a launch: {cfg:?} {mot:?}"
        );
    }
}

/// The hybrid backend with the CUDA checker as its large side: RRT-Connect plans equal to the
/// CPU's for a seed on MBM Panda problems (both models), with the large calls on the GPU, and a
/// large configuration batch answered by the GPU with the CPU's verdicts.
#[test]
fn gpu_hybrid_plans_like_the_cpu() {
    use gpu_motion_planner::collision::hybrid::{
        HybridChecker, HYBRID_MIN_WORK_POLYTOPES, HYBRID_MIN_WORK_SPHERES,
    };
    use gpu_motion_planner::planners::{plan, PlanRequest, PlannerId};
    if !common::gpu_or_skip("gpu_hybrid_plans_like_the_cpu") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_hybrid_plans_like_the_cpu") else {
        return;
    };
    for (shapes, min_work) in [
        (RobotShapes::Spheres, HYBRID_MIN_WORK_SPHERES),
        (RobotShapes::Polytopes, HYBRID_MIN_WORK_POLYTOPES),
    ] {
        for scene in ["bookshelf_small", "cage", "table_under_pick"] {
            let (r, p, base) = panda_problem(&data, scene);
            let opts = CheckerOptions {
                shapes,
                threads: 1,
                ..Default::default()
            };
            let cpu = || CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu");
            let cuda = CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cuda");
            let hybrid =
                HybridChecker::new(Box::new(cpu()), Box::new(cuda), min_work).expect("hybrid");
            let reference = cpu();
            let what = format!("{scene} ({shapes:?})");
            let (start, goal) = r.start_goal(&p).expect("start and goal");
            let mut req = PlanRequest::new(start, goal, PlannerId::RrtConnect);
            req.seed = 7;
            req.resolution = 0.02;
            req.time_limit = std::time::Duration::from_secs(120);
            let a = plan(&hybrid, &req).unwrap_or_else(|e| panic!("{what}: hybrid: {e}"));
            let b = plan(&reference, &req).unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
            assert_eq!(a.path, b.path, "{what}: path");
            assert_eq!(a.trajectory, b.trajectory, "{what}: trajectory");
            let mut sampler = sampler_for(&r, &p, 11);
            let mut batch = ConfigBatch::new(r.group.space.dof());
            for _ in 0..min_work.max(20_000) {
                batch.push(&sampler.uniform()).expect("row");
            }
            let before = hybrid.routed().large;
            let got = hybrid.check_configs(&batch).expect("hybrid configs");
            assert_eq!(hybrid.routed().large, before + 1, "{what}: on the GPU");
            assert_eq!(got, reference.check_configs(&batch).expect("cpu"), "{what}");
            eprintln!(
                "{what}: hybrid plan = cpu plan; calls {:?}",
                hybrid.routed()
            );
        }
    }
}

/// Motion checks with fewer refinements (`Checker::check_motions_refined`, what shortcutting
/// asks for): the CUDA backend's verdicts equal the CPU's for every cap, on random motions
/// around MBM Panda problems, both models.
#[test]
fn gpu_parity_refinement_caps() {
    if !common::gpu_or_skip("gpu_parity_refinement_caps") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_parity_refinement_caps") else {
        return;
    };
    let n = common::env_usize("GMP_PARITY_MOTIONS", 2000);
    for shapes in [RobotShapes::Spheres, RobotShapes::Polytopes] {
        for scene in ["bookshelf_thin", "cage"] {
            let (r, p, base) = panda_problem(&data, scene);
            let opts = CheckerOptions {
                shapes,
                ..Default::default()
            };
            let cpu = CpuChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cpu");
            let cuda = CudaChecker::new(&r.model, &r.group, &base, &p.scene, opts).expect("cuda");
            let mut sampler = sampler_for(&r, &p, 21);
            let mut motions = MotionBatch::new(r.group.space.dof());
            for _ in 0..n {
                let (a, b) = sampler.motion();
                motions.push(&a, &b).expect("motion");
            }
            let mut valid = Vec::new();
            for max in [0, 1, 3, 6] {
                let want = cpu.check_motions_refined(&motions, 0.02, max).expect("cpu");
                let got = cuda
                    .check_motions_refined(&motions, 0.02, max)
                    .expect("cuda");
                let diff = want.iter().zip(&got).filter(|(a, b)| a != b).count();
                eprintln!(
                    "parity: refinement cap {max}, {scene} {shapes:?}: {} motions, {} valid, diff {diff}",
                    want.len(),
                    want.iter().filter(|&&v| v).count()
                );
                assert_eq!(diff, 0, "{scene} {shapes:?}: cap {max}");
                valid.push(want.iter().filter(|&&v| v).count());
            }
            assert!(valid.windows(2).all(|w| w[0] <= w[1]), "{valid:?}");
        }
    }
}

/// The CUDA backend names the pairs in contact as the CPU reference does (the same names from
/// the reference's tests), and exactly where its own verdict is "in collision", also after a
/// scene update renames the obstacles.
#[test]
fn gpu_contacts_match_the_cpu() {
    if !common::gpu_or_skip("gpu_contacts_match_the_cpu") {
        return;
    }
    let Some(data) = common::mbm_or_skip("gpu_contacts_match_the_cpu") else {
        return;
    };
    let (r, p, base) = panda_problem(&data, "bookshelf_small");
    let opts = CheckerOptions::default();
    let mut scene = p.scene.clone();
    let mut s = sampler_for(&r, &p, 21);
    let mut compared = (0, 0);
    let mut cuda = CudaChecker::new(&r.model, &r.group, &base, &scene, opts).expect("cuda");
    for round in 0..2 {
        let cpu = CpuChecker::new(&r.model, &r.group, &base, &scene, opts).expect("cpu");
        for _ in 0..2000 {
            let q = s.config();
            let named = cuda.contacts(&q).expect("the CUDA backend names contacts");
            assert_eq!(Some(named.clone()), cpu.contacts(&q), "{q:?}");
            let free = cuda.check_config(&q).expect("verdict");
            assert_eq!(named.is_empty(), free, "{q:?}: {named:?}");
            compared.0 += 1;
            compared.1 += usize::from(!free);
        }
        if round == 0 {
            // Rename every obstacle (same shapes and poses): the names follow the update.
            let ids: Vec<String> = scene.iter().map(|o| o.id.clone()).collect();
            for id in ids {
                let mut o = scene.remove(&id).expect("remove");
                o.id = format!("renamed_{id}");
                scene.add(o).expect("add");
            }
            cuda.sync_scene(&scene).expect("sync");
        }
    }
    eprintln!(
        "contacts: {} configurations, {} in collision, CUDA names = CPU names",
        compared.0, compared.1
    );
    assert!(
        compared.1 > 100,
        "too few collisions to compare: {compared:?}"
    );
}
