//! `gmp bench collision`: configuration and motion throughput of the CPU and CUDA backends,
//! measured side by side in one run, written as JSON and a markdown table.
//!
//! Robots: the MotionBenchMaker Panda on its scenes (problem 1 of each chosen scene) and the
//! seed 000 scenario (`urdf/planar_arm9.urdf` among the four rectangles of
//! `config/planar_arm9_scene.yaml`, ~100 interpolation steps per motion). Configurations are
//! uniform in the joint limits; motions start uniform and move 1 rad (joint-space norm, clamped
//! into the limits) at a resolution of 0.01, so about 100 steps each. Every size where both
//! backends ran also counts verdict mismatches (expected 0).
//!
//! The CUDA side runs each of its kernel variants on the same batch, one table line each: the
//! generic table-driven kernels and the robot-specialised ones (`--variants`), and for motions
//! the motion kernels (naive, balanced, tiled: `--motion-kernels`); `--spec-builds` adds other
//! builds of the specialised kernels (layout, register cap). `--shapes` picks the robot model(s): the exact polytope model
//! (default) and/or the sphere model of the spherized URDF (Panda only).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::CliError;
use crate::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch, PreparedMotions, RobotShapes,
};
use crate::gpu::specialise::Layout;
use crate::gpu::{CudaChecker, CudaOptions, GpuTimings, KernelVariant, MotionKernel};
use crate::robot::{JointSpace, PlanningGroup, RobotModel};
use crate::scene::Scene;

/// Joint-space length of a benchmark motion (rad).
const MOTION_LENGTH: f64 = 1.0;
/// Resolution of benchmark motions (about 100 steps each).
const MOTION_RESOLUTION: f64 = 0.01;

/// `gmp bench collision` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchCollisionArgs {
    /// Robot: `panda` (MotionBenchMaker, needs the data; see GMP_DATA) or `planar9` (seed 000).
    #[arg(long, value_delimiter = ',', default_value = "panda,planar9")]
    pub robots: Vec<String>,
    /// Panda scenes (MotionBenchMaker scene names; problem 1 of each).
    #[arg(long, value_delimiter = ',', default_value = "bookshelf_small,cage")]
    pub scenes: Vec<String>,
    /// Configuration batch sizes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,10000,100000,1000000,10000000"
    )]
    pub config_sizes: Vec<usize>,
    /// Motion batch sizes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,10000,100000,1000000"
    )]
    pub motion_sizes: Vec<usize>,
    /// Motion kernels to measure side by side: naive, balanced, tiled.
    #[arg(long, value_delimiter = ',', default_value = "naive,balanced,tiled")]
    pub motion_kernels: Vec<String>,
    /// Backends to measure: cpu, cuda.
    #[arg(long, value_delimiter = ',', default_value = "cpu,cuda")]
    pub backends: Vec<String>,
    /// CUDA kernel variants to measure side by side: generic, specialised.
    #[arg(long, value_delimiter = ',', default_value = "generic,specialised")]
    pub variants: Vec<String>,
    /// Robot models: polytopes (exact, the default) and/or spheres (the spherized URDF; Panda).
    #[arg(long, value_delimiter = ',', default_value = "polytopes")]
    pub shapes: Vec<String>,
    /// More builds of the specialised kernels to measure besides the default one, each
    /// `LAYOUT[:REGISTERS]` (layout `inline`, `grouped`, `inline-fold`, `grouped-fold` or
    /// `looped`, optional register cap per thread, which replaces the looped layout's launch
    /// bounds), one more line per size labelled `specialised-<layout>[-r<registers>]`; e.g.
    /// `grouped,inline:128,looped`.
    #[arg(long, value_delimiter = ',')]
    pub spec_builds: Vec<String>,
    /// Largest configuration batch the CPU runs (larger sizes reuse its largest measured rate,
    /// marked `cpu_extrapolated`).
    #[arg(long, default_value_t = 1_000_000)]
    pub cpu_max_configs: usize,
    /// Largest motion batch the CPU runs.
    #[arg(long, default_value_t = 100_000)]
    pub cpu_max_motions: usize,
    /// Largest configuration batch the CPU backend also runs on one thread (the `1 core`
    /// columns: its rate and the GPU's ratio to it; larger sizes reuse its largest measured
    /// rate). 0: no one-thread run.
    #[arg(long, default_value_t = 100_000)]
    pub cpu_one_max_configs: usize,
    /// Output folder.
    #[arg(long, default_value = "results/collision")]
    pub out: PathBuf,
    /// Small sizes only (1e3..1e5 configurations, 1e3..1e4 motions).
    #[arg(long)]
    pub quick: bool,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Orders (`;`-separated) to measure each configuration batch in, one table line each,
    /// sorted on the host before timing: `none` (as generated: uniform random), `device` (by
    /// the CUDA checker's warp-coherent key, `gpu::sort_spec`), `device:CHUNK` (the same key
    /// within consecutive chunks of CHUNK configurations, as the checker's pipelined pieces
    /// are), or `J,J,...:BITS` (lexicographic by those joints, each cut into 2^BITS cells).
    /// With `GMP_SORT_MIN=off` this measures what the checker's own order could gain.
    #[arg(long, value_delimiter = ';', default_value = "none")]
    pub presort: Vec<String>,
}

/// A robot and scene to benchmark.
struct Case {
    name: String,
    shapes: RobotShapes,
    robot: RobotModel,
    group: PlanningGroup,
    base: Vec<f64>,
    scene: Scene,
}

fn crate_file(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.is_file() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn cases(a: &BenchCollisionArgs) -> Result<Vec<Case>, CliError> {
    let mut out = Vec::new();
    for shape in &a.shapes {
        let shapes = super::parse_shapes(shape)?;
        for mut c in robot_cases(a)? {
            if shapes == RobotShapes::Spheres && c.robot.spherized.is_none() {
                eprintln!("bench collision: {} has no sphere model, skipped", c.name);
                continue;
            }
            c.shapes = shapes;
            out.push(c);
        }
    }
    Ok(out)
}

fn robot_cases(a: &BenchCollisionArgs) -> Result<Vec<Case>, CliError> {
    let mut out = Vec::new();
    for r in &a.robots {
        match r.as_str() {
            "panda" => {
                let data = crate::mbm::data_dir()?;
                let mr = crate::mbm::load_robot(&data, "panda")?;
                // The first problem of each scene named (only those are parsed).
                let mut seen = std::collections::BTreeSet::new();
                let problems = crate::mbm::load_problems_where(&data, "panda", |scene, _| {
                    a.scenes.iter().any(|s| s == scene) && seen.insert(scene.to_string())
                })?;
                for s in &a.scenes {
                    let p = problems
                        .iter()
                        .find(|p| &p.scene_name == s)
                        .ok_or_else(|| CliError(format!("no MBM panda problem in scene '{s}'")))?;
                    out.push(Case {
                        name: format!("panda/{s}"),
                        shapes: RobotShapes::Polytopes,
                        base: mr.start_full_state(p),
                        robot: mr.model.clone(),
                        group: mr.group.clone(),
                        scene: p.scene.clone(),
                    });
                }
            }
            "planar9" => {
                let urdf = crate_file("urdf/planar_arm9.urdf");
                let srdf = crate_file("urdf/planar_arm9.srdf");
                let robot = RobotModel::from_urdf_file(&urdf, Some(&srdf), &Default::default())?;
                let group = robot.group("arm")?;
                let scene = crate::scene::load_scene(&crate_file("config/planar_arm9_scene.yaml"))?;
                out.push(Case {
                    name: "planar9/seed000".into(),
                    shapes: RobotShapes::Polytopes,
                    base: robot.tree.neutral_state(),
                    robot,
                    group,
                    scene,
                });
            }
            other => {
                return Err(CliError(format!(
                    "unknown bench robot '{other}' (expected panda or planar9)"
                )))
            }
        }
    }
    Ok(out)
}

fn random_configs(space: &JointSpace, n: usize, rng: &mut ChaCha8Rng) -> ConfigBatch {
    let mut b = ConfigBatch::with_capacity(space.dof(), n);
    for _ in 0..n {
        let _ = b.push(&space.sample_uniform(rng));
    }
    b
}

fn random_motions(space: &JointSpace, n: usize, rng: &mut ChaCha8Rng) -> MotionBatch {
    let dof = space.dof();
    let mut m = MotionBatch::new(dof);
    for _ in 0..n {
        let a = space.sample_uniform(rng);
        let d: Vec<f64> = (0..dof).map(|_| rng.random_range(-1.0..1.0)).collect();
        let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-9);
        let b: Vec<f64> = (0..dof)
            .map(|j| (a[j] + d[j] / norm * MOTION_LENGTH).clamp(space.lower[j], space.upper[j]))
            .collect();
        let _ = m.push(&a, &b);
    }
    m
}

/// An order the configuration batches are also measured in (`--presort`): the batch sorted on
/// the host, before timing, by a key of its joint values.
#[derive(Clone, Debug, PartialEq)]
enum Presort {
    /// The generated (uniform random) order.
    None,
    /// The CUDA checker's own key ([`crate::gpu::checker_cell_key`]), in consecutive chunks of this
    /// many configurations (0: the whole batch).
    Device(usize),
    /// Lexicographic by these joints, each cut into `2^bits` cells over its range.
    Joints(Vec<usize>, u32),
}

impl Presort {
    /// Parses a `--presort` entry: `none`, `device`, `device:CHUNK` or `J,J,...:BITS`.
    fn parse(s: &str) -> Result<Self, CliError> {
        let bad = || {
            CliError(format!(
                "--presort: '{s}' is not none, device, device:CHUNK or J,J,...:BITS (joint indices, bits 1..=16)"
            ))
        };
        let s = s.trim();
        if s == "none" {
            return Ok(Presort::None);
        }
        if let Some(rest) = s.strip_prefix("device") {
            return match rest.strip_prefix(':') {
                None if rest.is_empty() => Ok(Presort::Device(0)),
                Some(c) => c.parse().map(Presort::Device).map_err(|_| bad()),
                None => Err(bad()),
            };
        }
        let (js, bits) = s.split_once(':').ok_or_else(bad)?;
        let joints = js
            .split(',')
            .map(|j| j.trim().parse::<usize>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        let bits = bits.trim().parse::<u32>().map_err(|_| bad())?;
        if joints.is_empty() || !(1..=16).contains(&bits) {
            return Err(bad());
        }
        Ok(Presort::Joints(joints, bits))
    }

    /// `b` in this order (a copy), or `None` for [`Presort::None`].
    fn apply(&self, space: &JointSpace, b: &ConfigBatch) -> Result<Option<ConfigBatch>, CliError> {
        let dof = space.dof();
        let vals = b.values();
        let n = vals.len() / dof.max(1);
        let order: Vec<u32> = match self {
            Presort::None => return Ok(None),
            Presort::Device(c) => {
                // The CUDA checker's key on the f32 values it sees, chunk by chunk.
                let key = crate::gpu::checker_cell_key(space);
                let f32s: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
                let chunk = if *c == 0 { n.max(1) } else { *c };
                let mut order = Vec::with_capacity(n);
                for (k, part) in f32s.chunks(chunk * dof.max(1)).enumerate() {
                    let base = (k * chunk) as u32;
                    order.extend(key.order(part).into_iter().map(|i| base + i));
                }
                order
            }
            Presort::Joints(joints, bits) => {
                if let Some(&j) = joints.iter().find(|&&j| j >= dof) {
                    return Err(CliError(format!(
                        "--presort: joint {j} of a {dof}-joint group"
                    )));
                }
                let top = f64::from((1u32 << bits) - 1);
                let cell = |i: usize| {
                    joints.iter().fold(0u64, |k, &j| {
                        let (lo, hi) = (space.lower[j], space.upper[j]);
                        let c = ((vals[i * dof + j] - lo) * f64::from(1u32 << bits) / (hi - lo))
                            .clamp(0.0, top);
                        (k << bits) | c as u64
                    })
                };
                let mut idx: Vec<u32> = (0..n as u32).collect();
                idx.sort_by_cached_key(|&i| cell(i as usize));
                idx
            }
        };
        let mut out = Vec::with_capacity(vals.len());
        for i in order {
            let i = i as usize;
            out.extend_from_slice(&vals[i * dof..(i + 1) * dof]);
        }
        Ok(Some(ConfigBatch::from_values(dof, out)?))
    }
}

pub use crate::report::today;

fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    t.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Runs `f` once to warm up, then repeatedly until 0.3 s or 10 runs; returns the mean seconds of
/// the timed runs and the last result.
fn timed<T>(mut f: impl FnMut() -> Result<T, CliError>, warm: bool) -> Result<(f64, T), CliError> {
    if warm {
        f()?;
    }
    let mut total = 0.0;
    let mut runs = 0;
    loop {
        let t0 = Instant::now();
        let r = f()?;
        total += t0.elapsed().as_secs_f64();
        runs += 1;
        if total > 0.3 || runs >= 10 {
            return Ok((total / runs as f64, r));
        }
    }
}

fn gpu_json(secs: f64, n: usize, t: &GpuTimings) -> Value {
    let kernel_s = t.kernel_ms / 1e3;
    json!({
        "wall_s": secs,
        "per_s": n as f64 / secs,
        "kernel_ms": t.kernel_ms,
        "stage_ms": t.stage_ms,
        "htod_ms": t.htod_ms,
        "dtoh_ms": t.dtoh_ms,
        "launches": t.launches,
        "prepare_ms": t.prepare_ms,
        "first_round_ms": t.first_round_ms,
        "kernel_per_s": if kernel_s > 0.0 { n as f64 / kernel_s } else { 0.0 },
    })
}

/// A measured GPU configuration: its label, the checker (index) and the kernel variant.
type GpuRun = (String, usize, KernelVariant);

/// Parses a `--spec-builds` entry, `LAYOUT[:REGISTERS]`.
fn parse_build(s: &str) -> Result<(Layout, Option<usize>), CliError> {
    let bad = || {
        let names: Vec<&str> = Layout::ALL.iter().map(|l| l.name()).collect();
        CliError(format!(
            "--spec-builds: '{s}' is not LAYOUT[:REGISTERS] (layout {}; registers 16..=255)",
            names.join(", ")
        ))
    };
    let (layout, regs) = match s.split_once(':') {
        Some((l, r)) => (l, Some(r.trim().parse::<usize>().map_err(|_| bad())?)),
        None => (s, None),
    };
    let layout = Layout::parse(layout).ok_or_else(bad)?;
    if regs.is_some_and(|r| !(16..=255).contains(&r)) {
        return Err(bad());
    }
    Ok((layout, regs))
}

/// The CUDA checkers of a case and the runs to measure on them: each requested variant the
/// main checker has (default build of the specialised kernels), then each extra build that
/// differs from the default one.
fn gpu_runs(
    a: &BenchCollisionArgs,
    case: &Case,
    opts: CheckerOptions,
    variants: &[KernelVariant],
) -> Result<(Vec<CudaChecker>, Vec<GpuRun>), CliError> {
    let want_spec = variants.contains(&KernelVariant::Specialised);
    let build = |cuda: CudaOptions| {
        CudaChecker::with_options(
            &case.robot,
            &case.group,
            &case.base,
            &case.scene,
            opts,
            cuda,
        )
    };
    let mut main = build(CudaOptions {
        specialise: want_spec,
        ..Default::default()
    })?;
    let mut runs: Vec<GpuRun> = variants
        .iter()
        .filter(|&&v| main.set_kernel_variant(v).is_ok())
        .map(|&v| (v.name().to_string(), 0, v))
        .collect();
    let main_layout = main
        .specialisation()
        .and_then(|st| Layout::parse(&st.layout));
    let mut checkers = vec![main];
    let mut seen = Vec::new();
    for spec in a.spec_builds.iter().filter(|_| want_spec) {
        let (layout, regs) = parse_build(spec)?;
        if (regs.is_none() && main_layout == Some(layout)) || seen.contains(&(layout, regs)) {
            continue; // the default build, or one measured already
        }
        seen.push((layout, regs));
        let c = build(CudaOptions {
            specialise: true,
            spec_maxrreg: regs,
            spec_layout: Some(layout),
        })?;
        if c.specialisation().is_some() {
            let label = format!(
                "specialised-{}{}",
                layout.name(),
                regs.map_or(String::new(), |r| format!("-r{r}"))
            );
            runs.push((label, checkers.len(), KernelVariant::Specialised));
            checkers.push(c);
        }
    }
    Ok((checkers, runs))
}

fn parse_variants(names: &[String]) -> Result<Vec<KernelVariant>, CliError> {
    names
        .iter()
        .map(|n| match n.as_str() {
            "generic" => Ok(KernelVariant::Generic),
            "specialised" | "specialized" => Ok(KernelVariant::Specialised),
            other => Err(CliError(format!(
                "--variants: unknown kernel variant '{other}' (expected generic or specialised)"
            ))),
        })
        .collect()
}

/// The GPU measurement of `variant` in a row (for motions, the default motion kernel's).
fn gpu_entry<'a>(row: &'a Value, variant: &str) -> Option<&'a Value> {
    row["gpu"].as_array()?.iter().find(|g| {
        g["variant"] == variant
            && (g["motion_kernel"].is_null() || g["motion_kernel"] == MotionKernel::DEFAULT.name())
    })
}

/// Stores the GPU measurements of a row, its best GPU/CPU ratio and the specialised kernels'
/// speedup over the generic ones (configurations; for motions, with the default motion kernel).
fn finish_row(row: &mut Value, gpu: Vec<Value>) {
    let best = gpu
        .iter()
        .filter_map(|g| g["ratio"].as_f64())
        .reduce(f64::max);
    if let Some(b) = best {
        row["ratio"] = json!(b);
    }
    row["gpu"] = json!(gpu);
    let rate = |variant: &str| gpu_entry(row, variant).and_then(|g| g["per_s"].as_f64());
    if let (Some(s), Some(g)) = (rate("specialised"), rate("generic")) {
        row["speedup_specialised"] = json!(s / g);
    }
}

fn mismatches(a: &[bool], b: &[bool]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

/// Runs the benchmark and writes `<out>/collision_<device>_<date>.json` and `.md`.
pub fn run(a: &BenchCollisionArgs) -> Result<Value, CliError> {
    let want_cpu = a.backends.iter().any(|b| b == "cpu");
    let want_cuda = a.backends.iter().any(|b| b == "cuda");
    let (config_sizes, motion_sizes) = if a.quick {
        (vec![1_000, 10_000, 100_000], vec![1_000, 10_000])
    } else {
        (a.config_sizes.clone(), a.motion_sizes.clone())
    };
    let motion_kernels = a
        .motion_kernels
        .iter()
        .map(|k| {
            MotionKernel::from_name(k.trim()).ok_or_else(|| {
                CliError(format!(
                    "bench collision: unknown motion kernel '{k}' in --motion-kernels (naive, balanced, tiled)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if want_cuda && !crate::gpu::gpu_available() {
        return Err(CliError(
            "bench collision: --backends includes cuda but no CUDA device is available (use --backends cpu)"
                .into(),
        ));
    }
    let device = if want_cuda {
        crate::gpu::device_names().join(" + ")
    } else {
        "cpu-only".to_string()
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let date = today();
    let mut rows = Vec::new();
    let mut specialisations = Vec::new();
    let variants = parse_variants(&a.variants)?;
    for b in &a.spec_builds {
        parse_build(b)?; // fail before anything runs
    }
    let presorts = a
        .presort
        .iter()
        .map(|p| Presort::parse(p).map(|o| (p.clone(), o)))
        .collect::<Result<Vec<_>, _>>()?;
    for case in cases(a)? {
        let opts = CheckerOptions {
            shapes: case.shapes,
            ..Default::default()
        };
        let model = match case.shapes {
            RobotShapes::Polytopes => "polytopes",
            RobotShapes::Spheres => "spheres",
        };
        let space = case.group.space.clone();
        let cpu = CpuChecker::new(&case.robot, &case.group, &case.base, &case.scene, opts)?;
        let one_core = CheckerOptions { threads: 1, ..opts };
        let cpu1 = CpuChecker::new(&case.robot, &case.group, &case.base, &case.scene, one_core)?;
        let mut cpu1_rate: Option<f64> = None;
        let (mut checkers, runs) = if want_cuda {
            gpu_runs(a, &case, opts, &variants)?
        } else {
            (Vec::new(), Vec::new())
        };
        for g in &checkers {
            let kernels = match g.specialisation() {
                Some(st) => json!(st),
                None => json!({"unavailable": g.specialisation_unavailable()}),
            };
            eprintln!(
                "bench collision: {} ({model}) specialised kernels: {kernels}",
                case.name
            );
            specialisations.push(json!({"case": case.name, "model": model, "kernels": kernels}));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
        let mut cpu_rate_c: Option<f64> = None;
        for &n in &config_sizes {
            let generated = random_configs(&space, n, &mut rng);
            for (order_name, order) in &presorts {
                let sorted = order.apply(&space, &generated)?;
                let batch = sorted.as_ref().unwrap_or(&generated);
                let case_name = match order {
                    Presort::None => case.name.clone(),
                    _ => format!("{} [presorted {order_name}]", case.name),
                };
                let mut row = json!({"case": case_name, "model": model, "kind": "configs", "n": n});
                let mut cpu_v = None;
                if want_cpu && n <= a.cpu_max_configs {
                    let (s, v) = timed(|| Ok(cpu.check_configs(batch)?), false)?;
                    cpu_rate_c = Some(n as f64 / s);
                    row["cpu"] = json!({"wall_s": s, "per_s": n as f64 / s, "threads": threads});
                    row["free_fraction"] =
                        json!(v.iter().filter(|&&x| x).count() as f64 / n.max(1) as f64);
                    cpu_v = Some(v);
                } else if let Some(r) = cpu_rate_c {
                    row["cpu"] = json!({"per_s": r, "cpu_extrapolated": true, "threads": threads});
                }
                if want_cpu && n <= a.cpu_one_max_configs {
                    let (s, v) = timed(|| Ok(cpu1.check_configs(batch)?), false)?;
                    cpu1_rate = Some(n as f64 / s);
                    row["cpu_1"] = json!({"wall_s": s, "per_s": n as f64 / s, "threads": 1});
                    if let Some(c) = &cpu_v {
                        row["cpu_1"]["mismatches"] = json!(mismatches(c, &v));
                    }
                } else if let Some(r) = cpu1_rate {
                    row["cpu_1"] = json!({"per_s": r, "cpu_extrapolated": true, "threads": 1});
                }
                let mut gpu = Vec::new();
                // The same batch as a caller holding f32 values passes it (converted before timing).
                let f32_values: Vec<f32> = if runs.is_empty() {
                    Vec::new()
                } else {
                    batch.values().iter().map(|&x| x as f32).collect()
                };
                for (label, ci, v) in &runs {
                    let g = &mut checkers[*ci];
                    g.set_kernel_variant(*v)?;
                    let (s32, v32) = timed(|| Ok(g.check_configs_f32(&f32_values)?), true)?;
                    // With f32 input the host stages little, so the device is the bottleneck and
                    // the pipelined pieces' passes overlap as they would in a device-bound caller.
                    let t32 = g.last_timings();
                    let k32 = t32.kernel_ms;
                    let (s, verdicts) = timed(|| Ok(g.check_configs(batch)?), true)?;
                    let mut j = gpu_json(s, n, &g.last_timings());
                    j["variant"] = json!(label);
                    j["f32_in"] = json!({"wall_s": s32, "per_s": n as f64 / s32,
                    "kernel_ms": k32,
                    "stage_ms": t32.stage_ms, "htod_ms": t32.htod_ms, "dtoh_ms": t32.dtoh_ms,
                    "kernel_per_s": if k32 > 0.0 { n as f64 / (k32 / 1e3) } else { 0.0 },
                    "mismatches_vs_f64_in": mismatches(&verdicts, &v32)});
                    if let Some(c) = &cpu_v {
                        j["mismatches"] = json!(mismatches(c, &verdicts));
                    }
                    if let Some(r) = cpu_rate_c {
                        j["ratio"] = json!((n as f64 / s) / r);
                    }
                    if let Some(r) = cpu1_rate {
                        j["ratio_1_core"] = json!((n as f64 / s) / r);
                    }
                    gpu.push(j);
                }
                finish_row(&mut row, gpu);
                eprintln!("bench collision: {row}");
                rows.push(row);
            }
        }
        let mut cpu_rate_m: Option<f64> = None;
        for &n in &motion_sizes {
            let batch = random_motions(&space, n, &mut rng);
            let prepared: PreparedMotions =
                crate::collision::prepare_motions(&space, &batch, MOTION_RESOLUTION)?;
            let steps = prepared
                .segments
                .iter()
                .map(|&s| s as f64 + 1.0)
                .sum::<f64>()
                / n.max(1) as f64;
            let mut row = json!({"case": case.name, "model": model, "kind": "motions", "n": n,
                "mean_steps": steps});
            let mut cpu_v = None;
            if want_cpu && n <= a.cpu_max_motions {
                let (s, v) = timed(|| Ok(cpu.check_motions(&batch, MOTION_RESOLUTION)?), false)?;
                cpu_rate_m = Some(n as f64 / s);
                row["cpu"] = json!({"wall_s": s, "per_s": n as f64 / s, "threads": threads});
                row["free_fraction"] =
                    json!(v.iter().filter(|&&x| x).count() as f64 / n.max(1) as f64);
                cpu_v = Some(v);
            } else if let Some(r) = cpu_rate_m {
                row["cpu"] = json!({"per_s": r, "cpu_extrapolated": true, "threads": threads});
            }
            let mut gpu = Vec::new();
            for (label, ci, v) in &runs {
                let g = &mut checkers[*ci];
                g.set_kernel_variant(*v)?;
                for &k in &motion_kernels {
                    g.set_motion_kernel(k);
                    let (s, verdicts) =
                        timed(|| Ok(g.check_motions(&batch, MOTION_RESOLUTION)?), true)?;
                    let mut j = gpu_json(s, n, &g.last_timings());
                    j["variant"] = json!(label);
                    j["motion_kernel"] = json!(k.name());
                    if let Some(c) = &cpu_v {
                        j["mismatches"] = json!(mismatches(c, &verdicts));
                    }
                    if let Some(r) = cpu_rate_m {
                        j["ratio"] = json!((n as f64 / s) / r);
                    }
                    // Device-only time of the prepared batch (no host interpolation set-up).
                    let (sp, _) = timed(|| Ok(g.check_prepared(&prepared, k)?), false)?;
                    j["prepared_wall_s"] = json!(sp);
                    gpu.push(j);
                }
                g.set_motion_kernel(MotionKernel::DEFAULT);
            }
            finish_row(&mut row, gpu);
            eprintln!("bench collision: {row}");
            rows.push(row);
        }
    }
    let doc = json!({
        "benchmark": "collision",
        "device": device,
        "date": date,
        "host_threads": threads,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "motion_length_rad": MOTION_LENGTH,
        "motion_resolution": MOTION_RESOLUTION,
        "specialisations": specialisations,
        "rows": rows,
    });
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError(format!("cannot create {}: {e}", a.out.display())))?;
    let stem = format!("collision_{}_{}", sanitize(&device), date);
    let json_path = a.out.join(format!("{stem}.json"));
    let md_path = a.out.join(format!("{stem}.md"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)?)?;
    std::fs::write(&md_path, markdown(&doc))?;
    Ok(
        json!({"json": json_path, "markdown": md_path, "rows": doc["rows"].as_array().map(|r| r.len())}),
    )
}

fn fmt_rate(v: &Value) -> String {
    v.as_f64()
        .map(|x| format!("{x:.3e}"))
        .unwrap_or_else(|| "-".into())
}

fn fmt_ms(v: &Value) -> String {
    v.as_f64()
        .map(|x| format!("{x:.3}"))
        .unwrap_or_else(|| "-".into())
}

/// The markdown table of a result document.
pub fn markdown(doc: &Value) -> String {
    let mut s = format!(
        "# Collision benchmark\n\nDevice: {}  \nDate: {}  \nHost threads (CPU backend): {}  \nCommand: `{}`\n\n\
         Rates are checks per second, end to end through the `Checker` trait (host conversion \
         included); `kernel/s` counts kernel time only (CUDA events). Motions are {} rad long at \
         resolution {} (about 100 steps). `kernels` = the CUDA kernel variant (generic: \
         table-driven; specialised: generated for the robot) and, for motions, the motion kernel. \
         `ratio` = that line's GPU rate / CPU rate (`*` = CPU rate taken from its largest measured \
         size). `f32 in /s`: configurations end to end when the caller passes f32 values \
         (`check_configs_f32`: no f64 read and conversion on the host; same verdicts); \
         `f32 in kernel/s`: that run's kernel time (device-bound: the host stages little). `mism.` = \
         verdicts differing from the CPU. `1 core /s`: the CPU backend on one thread (configurations; \
         `*` as above), `ratio 1 core`: the line's GPU rate / that.\n\n",
        doc["device"].as_str().unwrap_or("?"),
        doc["date"].as_str().unwrap_or("?"),
        doc["host_threads"],
        doc["command"].as_str().unwrap_or(""),
        doc["motion_length_rad"],
        doc["motion_resolution"],
    );
    s.push_str("| case | model | kind | kernels | n | CPU /s | GPU /s | ratio | 1 core /s | ratio 1 core | f32 in /s | f32 in kernel/s | GPU kernel/s | kernel ms | stage ms | H2D ms | D2H ms | mism. |\n");
    s.push_str(
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let empty = Vec::new();
    let none = vec![Value::Null];
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let num = |v: &Value, digits: usize| {
        v.as_f64()
            .map(|x| format!("{x:.digits$}"))
            .unwrap_or_else(|| "-".into())
    };
    let rows = doc["rows"].as_array().unwrap_or(&empty);
    for r in rows {
        let extrapolated = |c: &Value| match c["cpu_extrapolated"].as_bool() {
            Some(true) => "*",
            _ => "",
        };
        let (star, star1) = (extrapolated(&r["cpu"]), extrapolated(&r["cpu_1"]));
        let gpu = match r["gpu"].as_array() {
            Some(g) if !g.is_empty() => g,
            _ => &none,
        };
        for g in gpu {
            let kernels = match (g["variant"].as_str(), g["motion_kernel"].as_str()) {
                (Some(v), Some(k)) => format!("{v}, {k}"),
                (Some(v), None) => v.to_string(),
                _ => "-".into(),
            };
            s.push_str(&format!(
                "| {} | {} | {} | {kernels} | {} | {}{star} | {} | {} | {}{star1} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                text(&r["case"]),
                text(&r["model"]),
                text(&r["kind"]),
                r["n"],
                fmt_rate(&r["cpu"]["per_s"]),
                fmt_rate(&g["per_s"]),
                num(&g["ratio"], 1),
                fmt_rate(&r["cpu_1"]["per_s"]),
                num(&g["ratio_1_core"], 1),
                match g["f32_in"]["mismatches_vs_f64_in"].as_u64() {
                    Some(0) | None => fmt_rate(&g["f32_in"]["per_s"]),
                    Some(k) => format!("{} ({k} differ)", fmt_rate(&g["f32_in"]["per_s"])),
                },
                fmt_rate(&g["f32_in"]["kernel_per_s"]),
                fmt_rate(&g["kernel_per_s"]),
                fmt_ms(&g["kernel_ms"]),
                fmt_ms(&g["stage_ms"]),
                fmt_ms(&g["htod_ms"]),
                fmt_ms(&g["dtoh_ms"]),
                if g["mismatches"].is_null() {
                    "-".to_string()
                } else {
                    g["mismatches"].to_string()
                },
            ));
        }
    }
    // Generic vs specialised, side by side (motions: the default motion kernel).
    let both: Vec<(&Value, &Value, &Value)> = rows
        .iter()
        .filter_map(|r| Some((r, gpu_entry(r, "generic")?, gpu_entry(r, "specialised")?)))
        .collect();
    if !both.is_empty() {
        s.push_str(
            "\n## Generic vs specialised kernels\n\n\
             Same batches as above (motions: the default motion kernel). Speedups are \
             specialised / generic.\n\n\
             | case | model | kind | n | generic kernel/s | specialised kernel/s | kernel speedup | \
             generic /s | specialised /s | end-to-end speedup |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for (r, g, sp) in both {
            let ratio = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.1}", x / y),
                _ => "-".into(),
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                text(&r["case"]),
                text(&r["model"]),
                text(&r["kind"]),
                r["n"],
                fmt_rate(&g["kernel_per_s"]),
                fmt_rate(&sp["kernel_per_s"]),
                ratio(&sp["kernel_per_s"], &g["kernel_per_s"]),
                fmt_rate(&g["per_s"]),
                fmt_rate(&sp["per_s"]),
                ratio(&sp["per_s"], &g["per_s"]),
            ));
        }
    }
    if let Some(specs) = doc["specialisations"].as_array().filter(|v| !v.is_empty()) {
        s.push_str("\n## Specialised kernels\n\n");
        for sp in specs {
            s.push_str(&format!(
                "- {} ({}): {}\n",
                text(&sp["case"]),
                text(&sp["model"]),
                sp["kernels"]
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_builds_parse() {
        assert_eq!(parse_build("grouped").unwrap(), (Layout::Grouped, None));
        assert_eq!(
            parse_build("inline:128").unwrap(),
            (Layout::Inline, Some(128))
        );
        assert_eq!(
            parse_build("looped:64").unwrap(),
            (Layout::Looped, Some(64))
        );
        for bad in ["tiled", "inline:", "inline:8", "grouped:x", "inline:300"] {
            assert!(parse_build(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_names_are_file_safe() {
        assert_eq!(sanitize("NVIDIA H100 80GB HBM3"), "NVIDIA-H100-80GB-HBM3");
    }

    #[test]
    fn markdown_lists_every_variant_and_compares_them() {
        let g = |variant: &str, k: Option<&str>, per_s: f64| {
            let t = GpuTimings {
                kernel_ms: 1e3 / (2.0 * per_s),
                ..Default::default()
            };
            let mut j = gpu_json(1.0 / per_s, 1, &t);
            j["variant"] = json!(variant);
            if let Some(k) = k {
                j["motion_kernel"] = json!(k);
            }
            j["mismatches"] = json!(0);
            j
        };
        let mut configs = json!({"case": "panda/cage", "model": "spheres", "kind": "configs",
            "n": 1, "cpu": {"per_s": 1.0}});
        finish_row(
            &mut configs,
            vec![g("generic", None, 1e8), g("specialised", None, 5e8)],
        );
        let speedup = |r: &Value| r["speedup_specialised"].as_f64().unwrap();
        assert!((speedup(&configs) - 5.0).abs() < 1e-9);
        let mut motions = json!({"case": "panda/cage", "model": "spheres", "kind": "motions",
            "n": 1, "cpu": {"per_s": 1.0}});
        finish_row(
            &mut motions,
            vec![
                g("generic", Some("naive"), 1.0),
                g("generic", Some("tiled"), 2.0),
                g("specialised", Some("naive"), 3.0),
                g("specialised", Some("tiled"), 8.0),
            ],
        );
        assert!((speedup(&motions) - 4.0).abs() < 1e-9);
        let doc = json!({"device": "test", "rows": [configs, motions],
            "specialisations": [{"case": "panda/cage", "model": "spheres", "kernels": {"bodies": 59}}]});
        let md = markdown(&doc);
        for line in [
            "| panda/cage | spheres | configs | generic | 1 |",
            "| panda/cage | spheres | configs | specialised | 1 |",
            "| panda/cage | spheres | motions | specialised, tiled | 1 |",
            "## Generic vs specialised kernels",
            "| panda/cage | spheres | configs | 1 | 2.000e8 | 1.000e9 | 5.0 | 1.000e8 | 5.000e8 | 5.0 |",
            "- panda/cage (spheres): {\"bodies\":59}",
        ] {
            assert!(md.contains(line), "missing `{line}` in\n{md}");
        }
    }

    #[test]
    fn presorts_parse_and_permute_the_batch_by_their_key() {
        for bad in ["", "device:x", "devices", "0,1", "0,a:2", "0:0", "0:17"] {
            let e = Presort::parse(bad).expect_err(bad);
            assert!(e.0.contains("--presort"), "{bad}: {}", e.0);
        }
        assert_eq!(Presort::parse("device").unwrap(), Presort::Device(0));
        assert_eq!(Presort::parse("device:64").unwrap(), Presort::Device(64));
        let space = JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![-1.0, 0.0],
            upper: vec![1.0, 4.0],
            continuous: vec![false; 2],
            max_velocity: vec![1.0; 2],
            max_acceleration: vec![1.0; 2],
            max_jerk: vec![f64::INFINITY; 2],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let b = random_configs(&space, 500, &mut rng);
        assert!(Presort::None.apply(&space, &b).unwrap().is_none());
        let by_b = Presort::parse("1:2")
            .unwrap()
            .apply(&space, &b)
            .unwrap()
            .unwrap();
        // The same rows, each once, in cells of joint b (four cells of width 1).
        let mut before: Vec<Vec<u64>> = (0..b.len())
            .map(|i| b.row(i).iter().map(|v| v.to_bits()).collect())
            .collect();
        let mut after: Vec<Vec<u64>> = (0..by_b.len())
            .map(|i| by_b.row(i).iter().map(|v| v.to_bits()).collect())
            .collect();
        let cells: Vec<u64> = (0..by_b.len())
            .map(|i| by_b.row(i)[1].floor() as u64)
            .collect();
        assert!(cells.windows(2).all(|w| w[0] <= w[1]), "not in cell order");
        before.sort();
        after.sort();
        assert_eq!(before, after);
        // Chunks are sorted each on their own.
        let chunked = Presort::Device(100).apply(&space, &b).unwrap().unwrap();
        for c in 0..5 {
            let mut a: Vec<u64> = (c * 100..c * 100 + 100)
                .map(|i| b.row(i)[0].to_bits())
                .collect();
            let mut z: Vec<u64> = (c * 100..c * 100 + 100)
                .map(|i| chunked.row(i)[0].to_bits())
                .collect();
            a.sort();
            z.sort();
            assert_eq!(a, z, "chunk {c} keeps its own configurations");
        }
        let e = Presort::parse("2:3")
            .unwrap()
            .apply(&space, &b)
            .expect_err("joint 2 of 2");
        assert!(e.0.contains("joint 2"), "{}", e.0);
    }

    #[test]
    fn an_unknown_motion_kernel_is_named_in_the_error() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            a: BenchCollisionArgs,
        }
        let Cli { a } = <Cli as clap::Parser>::try_parse_from([
            "bench",
            "--robots",
            "planar9",
            "--backends",
            "cpu",
            "--motion-kernels",
            "balanced,warped",
        ])
        .expect("arguments parse");
        let e = run(&a).expect_err("warped is no motion kernel");
        assert!(
            e.0.contains("'warped'") && e.0.contains("--motion-kernels"),
            "{}",
            e.0
        );
    }

    #[test]
    fn cpu_only_quick_bench_writes_json_and_markdown() {
        let dir = std::env::temp_dir().join(format!("gmp-bench-{}", std::process::id()));
        let a = BenchCollisionArgs {
            robots: vec!["planar9".into()],
            scenes: vec![],
            config_sizes: vec![200],
            motion_sizes: vec![20],
            motion_kernels: vec!["balanced".into(), "tiled".into()],
            backends: vec!["cpu".into()],
            variants: vec!["generic".into(), "specialised".into()],
            shapes: vec!["polytopes".into()],
            spec_builds: vec![],
            cpu_max_configs: 1_000_000,
            cpu_max_motions: 100_000,
            cpu_one_max_configs: 200,
            out: dir.clone(),
            quick: false,
            seed: 3,
            presort: vec!["none".into(), "device".into(), "0,2:3".into()],
        };
        let v = run(&a).expect("bench runs");
        let json_path = PathBuf::from(v["json"].as_str().unwrap());
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        assert_eq!(doc["device"], "cpu-only");
        // Three orders of the one configuration batch, then the motions.
        assert_eq!(doc["rows"].as_array().unwrap().len(), 4);
        assert_eq!(doc["rows"][1]["case"], "planar9/seed000 [presorted device]");
        // A presorted batch holds the same configurations: the same share is free.
        for r in 1..3 {
            assert_eq!(
                doc["rows"][r]["free_fraction"],
                doc["rows"][0]["free_fraction"]
            );
        }
        // The one-thread CPU run: the same verdicts, a rate of its own.
        let one = &doc["rows"][0]["cpu_1"];
        assert_eq!(one["threads"], 1);
        assert_eq!(one["mismatches"], 0);
        assert!(one["per_s"].as_f64().is_some_and(|r| r > 0.0), "{one}");
        let steps = doc["rows"][3]["mean_steps"].as_f64().unwrap();
        assert!(
            (80.0..=102.0).contains(&steps),
            "about 100 steps, got {steps}"
        );
        let md = std::fs::read_to_string(v["markdown"].as_str().unwrap()).unwrap();
        assert!(
            md.contains("| planar9/seed000 | polytopes | configs | - |"),
            "{md}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
