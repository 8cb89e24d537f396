//! `gmp bench dynamic`: the dynamic-roadmap benchmarks.
//!
//! * `--experiment seed003`: the Red-Green-Gray seed experiment. A 6-DOF arm in a
//!   32 x 32 x 16 voxel workspace, one rectangular prism per size placed at random
//!   orientations; after each update every edge is checked exactly and the DRM and RGG labels
//!   are scored against that ground truth.
//! * `--experiment scale`: the MotionBenchMaker Panda with roadmaps of `--sizes` edges (default
//!   10k and 100k): build time, time per update for one obstacle move on the CPU (BVH engine;
//!   the brute-force pass for comparison) and on the GPU side by side when one is present,
//!   label statistics, and replanning with the updated roadmap versus planning from scratch
//!   (lazy PRM, RRT-Connect) after the move. With `--voxel-map` (default) also the DRM voxel map
//!   alone, built on the CPU and on the GPU side by side (DRM-only builds of the same roadmap,
//!   the CPU's on at most `--voxel-cpu-edges` edges), and whether the two maps are identical.
//!
//! Results are printed as JSON and, with `--out`, written there as JSON and markdown.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use nalgebra::{Isometry3, Quaternion, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde_json::{json, Value};

use super::CliError;
use rand::seq::SliceRandom;

use crate::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use crate::planners::dynamic_roadmap::{
    sample_roadmap, DynamicRoadmap, DynamicRoadmapOptions, LabelMethod, RggEngine, UpdateStats,
    VoxelEngine,
};
use crate::planners::{plan, PlanRequest, PlannerId};
use crate::roadmap::{EdgeLabel, Roadmap};
use crate::robot::{LoadOptions, RobotModel};
use crate::scene::{Obstacle, Scene, Shape};

/// `gmp bench dynamic` arguments.
#[derive(Args, Debug)]
pub struct BenchDynamicArgs {
    /// `seed003` (labels against ground truth) or `scale` (Panda update and replanning times).
    #[arg(long, default_value = "seed003")]
    pub experiment: String,
    /// Experiment file of the seed experiment.
    #[arg(long, default_value = "config/dynamic_seed003.yaml")]
    pub config: PathBuf,
    /// Repetitions per obstacle size (seed003) or obstacle moves (scale); default from the
    /// file (seed003) or 20 (scale).
    #[arg(long)]
    pub repetitions: Option<usize>,
    /// Roadmap sizes in edges (scale), comma separated; each is a roadmap of its own.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
    pub sizes: Vec<usize>,
    /// Neighbours per vertex (scale).
    #[arg(long, default_value_t = 10)]
    pub neighbors: usize,
    /// Build the DRM voxel map too (scale; voxelising every checked configuration takes far
    /// longer than the rest of the build).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub drm: bool,
    /// Also build and update with the GPU when one is present (scale), side by side.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub gpu: bool,
    /// Time the DRM voxel map alone on the CPU and (when present) the GPU, side by side
    /// (scale): DRM-only builds of the roadmap, the map's own time from
    /// `DynamicRoadmap::voxel_map_stats`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub voxel_map: bool,
    /// Most edges the CPU voxel map is timed on (scale): a larger roadmap's map is built on the
    /// CPU for its first this many edges only (the GPU builds that same map too, for the
    /// like-for-like ratio and the equality check) and on the GPU for all edges.
    #[arg(long, default_value_t = 10_000)]
    pub voxel_cpu_edges: usize,
    /// Also time the brute-force CPU verdict pass (scale).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub brute_force: bool,
    /// Voxel size for the scale experiment (m).
    #[arg(long, default_value_t = 0.05)]
    pub cell_size: f64,
    /// Motion resolution for the scale experiment (rad).
    #[arg(long, default_value_t = 0.05)]
    pub resolution: f64,
    /// Worker threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Folder to write `<name>.json` and `<name>.md` into.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the scale experiment.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Deserialize)]
struct SeedConfig {
    urdf: PathBuf,
    workspace_min: [f64; 3],
    workspace_max: [f64; 3],
    cell_size: f64,
    roadmap_vertices: usize,
    roadmap_neighbors: usize,
    roadmap_seed: u64,
    resolution: f64,
    repetitions: usize,
    obstacle_seed: u64,
    position_min: [f64; 3],
    position_max: [f64; 3],
    sizes: Vec<[f64; 3]>,
}

/// Runs the benchmark named by `--experiment`.
pub fn run(a: &BenchDynamicArgs) -> Result<Value, CliError> {
    let (name, v, md) = match a.experiment.as_str() {
        "seed003" => {
            let (v, md) = seed003(a)?;
            ("seed003".to_string(), v, md)
        }
        "scale" => scale(a)?,
        other => {
            return Err(CliError(format!(
                "unknown experiment '{other}' (expected seed003 or scale)"
            )))
        }
    };
    if let Some(dir) = &a.out {
        super::write_bench_results(dir, &name, &v, &md)?;
    }
    Ok(v)
}

fn machine(gpu: &str) -> Value {
    let secs = crate::report::unix_now();
    let mut m = crate::report::machine_info();
    m["unix_time"] = json!(secs);
    m["date_utc"] = json!(crate::report::utc_date(secs));
    m["gpu"] = json!(gpu);
    // Other work on the machine skews timings; the load average says how much there was.
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        m["load_average_1_5_15_min"] = json!(l.split_whitespace().take(3).collect::<Vec<_>>());
    }
    m
}

fn random_rotation(rng: &mut ChaCha8Rng) -> UnitQuaternion<f64> {
    // Shoemake's uniform random rotation.
    let (u1, u2, u3): (f64, f64, f64) = (
        rng.random_range(0.0..1.0),
        rng.random_range(0.0..1.0),
        rng.random_range(0.0..1.0),
    );
    let tau = std::f64::consts::TAU;
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    UnitQuaternion::from_quaternion(Quaternion::new(
        b * (tau * u3).cos(),
        a * (tau * u2).sin(),
        a * (tau * u2).cos(),
        b * (tau * u3).sin(),
    ))
}

fn random_position(rng: &mut ChaCha8Rng, lo: &[f64; 3], hi: &[f64; 3]) -> Vector3<f64> {
    Vector3::from_fn(|k, _| {
        if hi[k] > lo[k] {
            rng.random_range(lo[k]..hi[k])
        } else {
            lo[k]
        }
    })
}

fn resolve(p: &Path) -> PathBuf {
    if p.exists() {
        p.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
    }
}

fn motions_of(dr: &DynamicRoadmap) -> Result<MotionBatch, CliError> {
    let r = dr.roadmap();
    let mut m = MotionBatch::new(r.dof());
    for e in r.edges() {
        let (Some(qa), Some(qb)) = (r.vertex(e.a), r.vertex(e.b)) else {
            return Err(CliError("roadmap edge names a missing vertex".into()));
        };
        m.push(qa, qb)?;
    }
    Ok(m)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn stats_of(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return json!(null);
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"mean": mean, "median": v[v.len() / 2], "min": v[0], "max": v[v.len() - 1]})
}

#[derive(Default)]
struct Score {
    truly_valid: usize,
    truly_invalid: usize,
    valid_as_valid: usize,
    invalid_as_invalid: usize,
    unknown: usize,
    mislabelled: usize,
}

/// Scores labels of the edges that are not in self-collision.
fn score(labels: &[EdgeLabel], truth: &[bool], selfc: &[bool], s: &mut Score) {
    for ((l, &free), &sc) in labels.iter().zip(truth).zip(selfc) {
        if sc {
            continue;
        }
        if free {
            s.truly_valid += 1;
        } else {
            s.truly_invalid += 1;
        }
        match (l, free) {
            (EdgeLabel::Valid, true) => s.valid_as_valid += 1,
            (EdgeLabel::Invalid, false) => s.invalid_as_invalid += 1,
            (EdgeLabel::Unknown, _) => s.unknown += 1,
            _ => s.mislabelled += 1,
        }
    }
}

fn frac(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn seed003(a: &BenchDynamicArgs) -> Result<(Value, String), CliError> {
    let path = resolve(&a.config);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CliError(format!("cannot read {}: {e}", path.display())))?;
    let cfg: SeedConfig =
        serde_yaml::from_str(&text).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let urdf = resolve(&cfg.urdf);
    let robot = RobotModel::from_urdf_file(&urdf, None, &LoadOptions::default())?;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let opts = DynamicRoadmapOptions {
        resolution: cfg.resolution,
        drm_cell_size: Some(cfg.cell_size),
        drm_bounds: Some((cfg.workspace_min, cfg.workspace_max)),
        threads: a.threads,
        ..DynamicRoadmapOptions::default()
    };
    let t0 = Instant::now();
    let mut dr = DynamicRoadmap::sample(
        &robot,
        &group,
        &base,
        cfg.roadmap_vertices,
        cfg.roadmap_neighbors,
        cfg.roadmap_seed,
        opts.clone(),
    )
    .map_err(|e| CliError(e.to_string()))?;
    let build = t0.elapsed();
    let motions = motions_of(&dr)?;
    let n_edges = dr.roadmap().num_edges();
    let selfc: Vec<bool> = (0..n_edges).map(|e| dr.self_collision(e)).collect();
    let reps = a.repetitions.unwrap_or(cfg.repetitions);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.obstacle_seed);
    let mut scene = Scene::default();
    let mut checker = CpuChecker::new(
        &robot,
        &group,
        &base,
        &scene,
        CheckerOptions {
            threads: a.threads,
            ..CheckerOptions::default()
        },
    )?;
    let mut rows = Vec::new();
    let mut md = String::new();
    md.push_str(&format!(
        "# Dynamic roadmap: seed experiment 003 (DRM vs RGG labels)\n\n\
         Command: `gmp bench dynamic --experiment seed003 --config {} --out results/dynamic`{}\n\n\
         Machine: {}\n\n\
         Roadmap: {} vertices, {} edges ({} in self-collision, excluded below), resolution {} rad, \
         voxels {} m in a {:?}..{:?} m workspace. {} repetitions per size (random orientation, \
         centre uniform in {:?}..{:?}). Build (self-collision check, sweep, maps): {:.1} ms.\n\n\
         | prism size (m) | DRM valid->Valid | RGG valid->Valid | RGG invalid->Invalid | DRM Unknown (mean) | RGG Unknown (mean) | mislabelled DRM / RGG | DRM update ms (median) | RGG update ms (median) |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        a.config.display(),
        a.repetitions
            .map(|r| format!(" --repetitions {r}"))
            .unwrap_or_default(),
        machine("none (CPU only)"),
        dr.roadmap().num_vertices(),
        n_edges,
        selfc.iter().filter(|&&s| s).count(),
        cfg.resolution,
        cfg.cell_size,
        cfg.workspace_min,
        cfg.workspace_max,
        reps,
        cfg.position_min,
        cfg.position_max,
        ms(build)
    ));
    for (si, size) in cfg.sizes.iter().enumerate() {
        let id = format!("prism{si}");
        let (mut drm, mut rgg) = (Score::default(), Score::default());
        let (mut t_drm, mut t_rgg, mut t_both, mut t_truth) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for rep in 0..reps {
            let pose = Isometry3::from_parts(
                random_position(&mut rng, &cfg.position_min, &cfg.position_max).into(),
                random_rotation(&mut rng),
            );
            if rep == 0 {
                scene.upsert(Obstacle {
                    id: id.clone(),
                    shape: Shape::Box {
                        half_extents: Vector3::new(size[0], size[1], size[2]) * 0.5,
                    },
                    pose,
                })?;
            } else {
                scene.set_pose(&id, pose)?;
            }
            let t = Instant::now();
            let st: UpdateStats = dr.update(&scene).map_err(|e| CliError(e.to_string()))?;
            t_both.push(ms(t.elapsed()));
            t_drm.push(ms(st.drm_time));
            t_rgg.push(ms(st.rgg_time));
            let t = Instant::now();
            checker.sync_scene(&scene);
            let truth = checker.check_motions(&motions, cfg.resolution)?;
            t_truth.push(ms(t.elapsed()));
            let ld = dr.labels(LabelMethod::Drm).unwrap_or_default();
            let lr = dr.labels(LabelMethod::Rgg).unwrap_or_default();
            score(&ld, &truth, &selfc, &mut drm);
            score(&lr, &truth, &selfc, &mut rgg);
        }
        // Next size starts from an empty scene.
        scene.remove(&id)?;
        dr.update(&scene).map_err(|e| CliError(e.to_string()))?;
        let r = reps.max(1) as f64;
        let row = json!({
            "size": size,
            "repetitions": reps,
            "truly_valid_per_update": drm.truly_valid as f64 / r,
            "truly_invalid_per_update": drm.truly_invalid as f64 / r,
            "drm": {
                "valid_labelled_valid": frac(drm.valid_as_valid, drm.truly_valid),
                "unknown_per_update": drm.unknown as f64 / r,
                "mislabelled": drm.mislabelled,
                "update_ms": stats_of(t_drm.clone()),
            },
            "rgg": {
                "valid_labelled_valid": frac(rgg.valid_as_valid, rgg.truly_valid),
                "invalid_labelled_invalid": frac(rgg.invalid_as_invalid, rgg.truly_invalid),
                "unknown_per_update": rgg.unknown as f64 / r,
                "mislabelled": rgg.mislabelled,
                "update_ms": stats_of(t_rgg.clone()),
            },
            "rgg_extra_labelled_vs_drm": frac(
                rgg.valid_as_valid + rgg.invalid_as_invalid,
                drm.valid_as_valid + drm.invalid_as_invalid
            ) - 1.0,
            "update_both_ms": stats_of(t_both),
            "ground_truth_all_edges_ms": stats_of(t_truth),
        });
        let med = |v: &Value, k: &str| v[k]["update_ms"]["median"].as_f64().unwrap_or(0.0);
        md.push_str(&format!(
            "| {:?} | {:.1}% | {:.1}% | {:.1}% | {:.1} | {:.1} | {} / {} | {:.3} | {:.3} |\n",
            size,
            100.0 * frac(drm.valid_as_valid, drm.truly_valid),
            100.0 * frac(rgg.valid_as_valid, rgg.truly_valid),
            100.0 * frac(rgg.invalid_as_invalid, rgg.truly_invalid),
            drm.unknown as f64 / r,
            rgg.unknown as f64 / r,
            drm.mislabelled,
            rgg.mislabelled,
            med(&row, "drm"),
            med(&row, "rgg"),
        ));
        rows.push(row);
    }
    let (cells, boxes, caps) = dr.sizes();
    let v = json!({
        "experiment": "seed003",
        "machine": machine("none (CPU only)"),
        "config": a.config.display().to_string(),
        "roadmap": {"vertices": dr.roadmap().num_vertices(), "edges": n_edges,
                    "self_collision_edges": selfc.iter().filter(|&&s| s).count()},
        "resolution": cfg.resolution,
        "cell_size": cfg.cell_size,
        "build_ms": ms(build),
        "precomputed": {"voxel_map_entries": cells, "outer_boxes": boxes, "inner_capsules": caps},
        "sizes": rows,
    });
    md.push_str(
        "\nFractions are over edges not in self-collision, summed over all repetitions; \
         `valid->Valid` = truly free edges (CPU checker at the roadmap resolution) labelled \
         Valid. DRM never labels Invalid (beyond self-collision). Update times are the label \
         work of one obstacle move (old state removed, new one inserted), measured inside one \
         update that runs both methods.\n",
    );
    Ok((v, md))
}

/// The roadmap of one scale size: Panda configurations free of self-collision joined to their
/// `k` nearest neighbours, enough of them for `edges` edges, of which exactly `edges` are kept
/// (a seeded random subset, in their original order).
fn scale_roadmap(
    checker: &dyn Checker,
    edges: usize,
    k: usize,
    seed: u64,
) -> Result<Roadmap, CliError> {
    // A k-nearest-neighbour graph has between k/2 and k edges per vertex (~0.63 k here).
    let vertices = (edges as f64 / (0.55 * k.max(1) as f64)).ceil() as usize + 2;
    let (full, _) = sample_roadmap(checker, vertices, k, seed)?;
    let mut keep: Vec<usize> = (0..full.num_edges()).collect();
    if keep.len() > edges {
        keep.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x5eed));
        keep.truncate(edges);
        keep.sort_unstable();
    }
    let mut r = Roadmap::new(full.dof());
    for v in 0..full.num_vertices() {
        let q = full
            .vertex(v)
            .ok_or_else(|| CliError(format!("roadmap vertex {v} is missing")))?;
        r.add_vertex(q)?;
    }
    for &e in &keep {
        let x = &full.edges()[e];
        r.add_edge(x.a, x.b, x.length, EdgeLabel::Unknown)?;
    }
    Ok(r)
}

/// The first `edges` edges of `r` (all of its vertices).
fn prefix_roadmap(r: &Roadmap, edges: usize) -> Result<Roadmap, CliError> {
    let mut out = Roadmap::new(r.dof());
    for v in 0..r.num_vertices() {
        let q = r
            .vertex(v)
            .ok_or_else(|| CliError(format!("roadmap vertex {v} is missing")))?;
        out.add_vertex(q)?;
    }
    for x in r.edges().iter().take(edges) {
        out.add_edge(x.a, x.b, x.length, EdgeLabel::Unknown)?;
    }
    Ok(out)
}

/// Times of one voxel map build (ms): the whole map, its cells stage, the CUDA kernels.
#[derive(Clone, Copy)]
struct VoxelTimes {
    map: f64,
    cells: f64,
    kernels: Option<f64>,
}

/// The voxel map of a DRM-only build of `roadmap`: its times and the build.
fn voxel_build(
    s: &ScaleSetup<'_>,
    roadmap: Roadmap,
    cell: f64,
    gpu: bool,
) -> Result<(VoxelTimes, DynamicRoadmap), CliError> {
    let o = DynamicRoadmapOptions {
        rgg: false,
        plan_with: LabelMethod::Drm,
        drm_cell_size: Some(cell),
        drm_bounds: None,
        gpu,
        ..s.opts.clone()
    };
    let d = DynamicRoadmap::new(s.robot, s.group, &s.base, roadmap, o)?;
    let st = d
        .voxel_map_stats()
        .ok_or_else(|| CliError("the voxel map was not built".into()))?;
    if gpu && st.engine != VoxelEngine::Cuda {
        return Err(CliError("the CUDA voxel builder did not run".into()));
    }
    let t = VoxelTimes {
        map: ms(st.build_time),
        cells: ms(st.cells_time),
        kernels: st.cuda.map(|t| t.kernel_ms),
    };
    Ok((t, d))
}

/// The DRM voxel map of `roadmap` built on the CPU (its first `--voxel-cpu-edges` edges) and on
/// the GPU (those edges, and all of them), side by side: JSON and the markdown cells
/// `CPU | GPU | CPU/GPU | GPU all edges | equal`.
fn voxel_map_sizes(
    a: &BenchDynamicArgs,
    s: &ScaleSetup<'_>,
    roadmap: &Roadmap,
) -> Result<(Value, String), CliError> {
    let n = roadmap.num_edges();
    let cap = a.voxel_cpu_edges.clamp(1, n.max(1)).min(n);
    let sub = prefix_roadmap(roadmap, cap)?;
    let (cpu_t, cpu) = voxel_build(s, sub.clone(), a.cell_size, false)?;
    let (entries, dims) = cpu
        .voxel_map()
        .map_or((0, [0; 3]), |m| (m.edges.len(), m.grid.dims));
    eprintln!(
        "bench dynamic scale: CPU voxel map of {cap} edges {:.0} ms",
        cpu_t.map
    );
    let (mut gpu_t, mut all_t, mut equal) = (None, None, None);
    if s.gpu {
        let (t, g) = voxel_build(s, sub, a.cell_size, true)?;
        equal = Some(g.voxel_map() == cpu.voxel_map());
        gpu_t = Some(t);
        drop(g);
        drop(cpu);
        all_t = if cap < n {
            Some(voxel_build(s, roadmap.clone(), a.cell_size, true)?.0)
        } else {
            gpu_t
        };
        eprintln!(
            "bench dynamic scale: GPU voxel map of {cap} edges {:.0} ms, of {n} edges {:.0} ms, identical to the CPU's: {}",
            t.map,
            all_t.map_or(f64::NAN, |t| t.map),
            equal.unwrap_or(false)
        );
    }
    let times = |t: Option<VoxelTimes>| {
        t.map_or(
            Value::Null,
            |t| json!({"map_ms": t.map, "cells_ms": t.cells, "kernels_ms": t.kernels}),
        )
    };
    let v = json!({
        "cell_size": a.cell_size,
        "cpu_edges": cap,
        "grid_dims_cpu_edges": dims,
        "entries_cpu_edges": entries,
        "cpu": times(Some(cpu_t)),
        "gpu": times(gpu_t),
        "cpu_over_gpu": gpu_t.map(|g| cpu_t.map / g.map),
        "gpu_all_edges": times(all_t),
        "maps_equal": equal,
    });
    let secs = |t: Option<VoxelTimes>| {
        t.map_or("-".to_string(), |t| {
            let k = t
                .kernels
                .map_or(String::new(), |k| format!(", kernels {:.2}", k / 1e3));
            format!("{:.2} (cells {:.2}{k})", t.map / 1e3, t.cells / 1e3)
        })
    };
    let md = format!(
        "{} [{cap}] | {} | {} | {} | {} |",
        secs(Some(cpu_t)),
        secs(gpu_t),
        gpu_t.map_or("-".to_string(), |g| format!("{:.0}", cpu_t.map / g.map)),
        secs(all_t),
        equal.map_or("-", |e| if e { "yes" } else { "NO" }),
    );
    Ok((v, md))
}

/// What one scale size measured, per obstacle move.
#[derive(Default)]
struct ScaleSeries {
    update_cpu: Vec<f64>,
    update_gpu: Vec<f64>,
    /// Parts of the updates: (labelling, bookkeeping) per move, CPU and GPU roadmaps.
    parts_cpu: (Vec<f64>, Vec<f64>),
    parts_gpu: (Vec<f64>, Vec<f64>),
    pass_bvh: Vec<f64>,
    pass_brute: Vec<f64>,
    pass_cuda: Vec<f64>,
    kernel: Vec<f64>,
    candidates: Vec<f64>,
    listed: Vec<f64>,
    relabelled: Vec<f64>,
    valid: Vec<f64>,
    invalid: Vec<f64>,
    unknown: Vec<f64>,
    plan_cpu: Vec<f64>,
    replan_cpu: Vec<f64>,
    replan_gpu: Vec<f64>,
    scratch_lazy_prm: Vec<f64>,
    scratch_rrt_connect: Vec<f64>,
    mismatches: usize,
}

fn med(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The robot and settings shared by the scale sizes.
struct ScaleSetup<'a> {
    robot: &'a RobotModel,
    group: &'a crate::robot::PlanningGroup,
    base: Vec<f64>,
    opts: DynamicRoadmapOptions,
    gpu: bool,
}

/// One scale size: build on the CPU (and the GPU), then `repetitions` moves of one box.
fn scale_size(
    a: &BenchDynamicArgs,
    s: &ScaleSetup<'_>,
    target: usize,
) -> Result<(Value, String), CliError> {
    let (robot, group, base) = (s.robot, s.group, &s.base[..]);
    let copts = CheckerOptions {
        threads: a.threads,
        ..CheckerOptions::default()
    };
    let empty = CpuChecker::new(robot, group, base, &Scene::default(), copts)?;
    let t = Instant::now();
    let roadmap = scale_roadmap(&empty, target, a.neighbors, a.seed)?;
    let sample_ms = ms(t.elapsed());
    let (nv, n_edges) = (roadmap.num_vertices(), roadmap.num_edges());
    eprintln!("bench dynamic scale: {n_edges} edges, {nv} vertices sampled in {sample_ms:.0} ms");
    let (voxel, voxel_md) = if a.voxel_map {
        let (v, md) = voxel_map_sizes(a, s, &roadmap)?;
        (v, md)
    } else {
        (Value::Null, "- | - | - | - | - |".to_string())
    };
    let t = Instant::now();
    let mut cpu = DynamicRoadmap::new(robot, group, base, roadmap.clone(), s.opts.clone())?;
    let build_cpu = ms(t.elapsed());
    eprintln!("bench dynamic scale: CPU build {build_cpu:.0} ms");
    let mut cuda = None;
    let mut build_gpu = None;
    let mut build_labels_equal = None;
    if s.gpu {
        let t = Instant::now();
        let o = DynamicRoadmapOptions {
            gpu: true,
            ..s.opts.clone()
        };
        let d = DynamicRoadmap::new(robot, group, base, roadmap, o)?;
        build_gpu = Some(ms(t.elapsed()));
        if d.rgg_engine() != RggEngine::Cuda {
            return Err(CliError("the CUDA label engine did not start".into()));
        }
        build_labels_equal = Some(
            d.labels(LabelMethod::Rgg) == cpu.labels(LabelMethod::Rgg)
                && d.voxel_map() == cpu.voxel_map(),
        );
        eprintln!("bench dynamic scale: GPU build {:.0} ms", ms(t.elapsed()));
        cuda = Some(d);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let mut scene = Scene::default();
    let (lo, hi) = ([0.2, -0.5, 0.0], [0.7, 0.5, 0.8]);
    scene.add(Obstacle {
        id: "box".into(),
        shape: Shape::Box {
            half_extents: Vector3::new(0.1, 0.1, 0.1),
        },
        pose: Isometry3::translation(0.5, 0.0, 0.4),
    })?;
    cpu.update(&scene)?;
    if let Some(d) = cuda.as_mut() {
        d.update(&scene)?;
    }
    let mut checker = CpuChecker::new(robot, group, base, &scene, copts)?;
    let reps = a.repetitions.unwrap_or(20);
    let mut m = ScaleSeries::default();
    let (mut replan_ok, mut lazy_ok, mut rrtc_ok) = (0usize, 0usize, 0usize);
    for rep in 0..reps {
        let pose = Isometry3::from_parts(
            random_position(&mut rng, &lo, &hi).into(),
            random_rotation(&mut rng),
        );
        scene.set_pose("box", pose)?;
        let obstacle = scene
            .get("box")
            .cloned()
            .ok_or_else(|| CliError("the box left the scene".into()))?;
        // Whole updates (the old state taken off, the new one labelled, edges relabelled).
        let t = Instant::now();
        let st = cpu.update(&scene)?;
        let upd_cpu = ms(t.elapsed());
        m.update_cpu.push(upd_cpu);
        m.parts_cpu.0.push(ms(st.labelling_time));
        m.parts_cpu.1.push(ms(st.bookkeeping_time));
        m.candidates.push(st.rgg_candidates as f64);
        m.relabelled.push(st.relabelled as f64);
        let mut upd_gpu = None;
        if let Some(d) = cuda.as_mut() {
            let t = Instant::now();
            let gst = d.update(&scene)?;
            let x = ms(t.elapsed());
            m.update_gpu.push(x);
            m.parts_gpu.0.push(ms(gst.labelling_time));
            m.parts_gpu.1.push(ms(gst.bookkeeping_time));
            upd_gpu = Some(x);
            if d.labels(LabelMethod::Rgg) != cpu.labels(LabelMethod::Rgg) {
                m.mismatches += 1;
            }
        }
        // The verdict pass alone, per engine (no bookkeeping).
        let t = Instant::now();
        let v_bvh = cpu.rgg_verdicts(&obstacle, RggEngine::Bvh)?;
        m.pass_bvh.push(ms(t.elapsed()));
        m.listed.push(v_bvh.len() as f64);
        if a.brute_force {
            let t = Instant::now();
            let v = cpu.rgg_verdicts(&obstacle, RggEngine::BruteForce)?;
            m.pass_brute.push(ms(t.elapsed()));
            m.mismatches += usize::from(v != v_bvh);
        }
        if let Some(d) = cuda.as_ref() {
            let t = Instant::now();
            let v = d.rgg_verdicts(&obstacle, RggEngine::Cuda)?;
            m.pass_cuda.push(ms(t.elapsed()));
            m.kernel
                .push(d.cuda_timings().map_or(f64::NAN, |t| t.kernel_ms));
            m.mismatches += usize::from(v != v_bvh);
        }
        if let Some(c) = cpu.label_counts(LabelMethod::Rgg) {
            m.valid.push(c.valid as f64);
            m.invalid.push(c.invalid as f64);
            m.unknown.push(c.unknown as f64);
        }
        // Replanning between two roadmap vertices valid in the new scene.
        checker.sync_scene(&scene);
        let (qs, qg) = loop {
            let s = rng.random_range(0..nv);
            let g = rng.random_range(0..nv);
            let (Some(qs), Some(qg)) = (cpu.roadmap().vertex(s), cpu.roadmap().vertex(g)) else {
                continue;
            };
            if s != g && checker.check_config(qs)? && checker.check_config(qg)? {
                break (qs.to_vec(), qg.to_vec());
            }
        };
        let mut req = PlanRequest::new(qs, qg, PlannerId::LazyPrm);
        req.resolution = a.resolution;
        req.seed = a.seed + rep as u64;
        req.time_limit = Duration::from_secs(5);
        req.shortcut_rounds = 0;
        let t = Instant::now();
        if cpu.plan(&checker, &req).is_ok() {
            let p = ms(t.elapsed());
            replan_ok += 1;
            m.plan_cpu.push(p);
            m.replan_cpu.push(upd_cpu + p);
            if let (Some(d), Some(u)) = (cuda.as_mut(), upd_gpu) {
                let t = Instant::now();
                if d.plan(&checker, &req).is_ok() {
                    m.replan_gpu.push(u + ms(t.elapsed()));
                }
            }
        }
        let t = Instant::now();
        if plan(&checker, &req).is_ok() {
            lazy_ok += 1;
            m.scratch_lazy_prm.push(ms(t.elapsed()));
        }
        req.planner = PlannerId::RrtConnect;
        let t = Instant::now();
        if plan(&checker, &req).is_ok() {
            rrtc_ok += 1;
            m.scratch_rrt_connect.push(ms(t.elapsed()));
        }
    }
    let (cells, boxes, caps) = cpu.sizes();
    let ratio = |x: &[f64], y: &[f64]| {
        if y.is_empty() {
            Value::Null
        } else {
            json!(med(x) / med(y))
        }
    };
    let v = json!({
        "edges": n_edges,
        "vertices": nv,
        "neighbors": a.neighbors,
        "sample_roadmap_ms": sample_ms,
        "build_cpu_ms": build_cpu,
        "build_gpu_ms": build_gpu,
        "build_labels_equal": build_labels_equal,
        "voxel_map": voxel,
        "precomputed": {"voxel_map_entries": cells, "outer_boxes": boxes, "inner_capsules": caps},
        "moves": reps,
        "update_ms": {"cpu_bvh": stats_of(m.update_cpu.clone()), "gpu": stats_of(m.update_gpu.clone())},
        "update_parts_ms": {
            "cpu_labelling": stats_of(m.parts_cpu.0.clone()),
            "cpu_bookkeeping": stats_of(m.parts_cpu.1.clone()),
            "gpu_labelling": stats_of(m.parts_gpu.0.clone()),
            "gpu_bookkeeping": stats_of(m.parts_gpu.1.clone()),
        },
        "update_cpu_over_gpu": ratio(&m.update_cpu, &m.update_gpu),
        "verdict_pass_ms": {
            "cpu_bvh": stats_of(m.pass_bvh.clone()),
            "cpu_brute_force": stats_of(m.pass_brute.clone()),
            "gpu": stats_of(m.pass_cuda.clone()),
            "gpu_kernel": stats_of(m.kernel.clone()),
        },
        "verdict_pass_brute_force_over_bvh": ratio(&m.pass_brute, &m.pass_bvh),
        "verdict_pass_bvh_over_gpu": ratio(&m.pass_bvh, &m.pass_cuda),
        "engine_mismatches": m.mismatches,
        "pairs_tested_per_update_cpu_bvh": stats_of(m.candidates.clone()),
        "edges_listed_per_obstacle": stats_of(m.listed.clone()),
        "edges_relabelled_per_update": stats_of(m.relabelled.clone()),
        "rgg_labels_after_move": {
            "valid": stats_of(m.valid.clone()),
            "invalid": stats_of(m.invalid.clone()),
            "unknown": stats_of(m.unknown.clone()),
        },
        "plan_with_dynamic_roadmap_ms": stats_of(m.plan_cpu.clone()),
        "replan_end_to_end_ms": {"cpu": stats_of(m.replan_cpu.clone()), "gpu": stats_of(m.replan_gpu.clone())},
        "replan_successes": replan_ok,
        "scratch_ms": {"lazy_prm": stats_of(m.scratch_lazy_prm.clone()), "rrt_connect": stats_of(m.scratch_rrt_connect.clone())},
        "scratch_successes": {"lazy_prm": lazy_ok, "rrt_connect": rrtc_ok},
    });
    let opt = |x: &[f64], d: usize| {
        if x.is_empty() {
            "-".to_string()
        } else {
            format!("{:.*}", d, med(x))
        }
    };
    // "total (labelling + bookkeeping)", medians.
    let with_parts = |x: &[f64], p: &(Vec<f64>, Vec<f64>)| {
        if x.is_empty() {
            "-".to_string()
        } else {
            format!("{:.3} ({:.3} + {:.3})", med(x), med(&p.0), med(&p.1))
        }
    };
    let row = format!(
        "| {n_edges} | {nv} | {:.1} | {} | {voxel_md} {} | {} | {} | {} / {} / {} | {} | {:.0} | {:.0} | {:.0} / {:.0} / {:.0} | {} ({replan_ok}) | {} | {} | {} ({lazy_ok}) | {} ({rrtc_ok}) |\n",
        build_cpu / 1e3,
        build_gpu.map_or("-".into(), |b| format!("{:.1}", b / 1e3)),
        with_parts(&m.update_cpu, &m.parts_cpu),
        with_parts(&m.update_gpu, &m.parts_gpu),
        if m.update_gpu.is_empty() { "-".into() } else { format!("{:.1}", med(&m.update_cpu) / med(&m.update_gpu)) },
        opt(&m.pass_brute, 3),
        opt(&m.pass_bvh, 3),
        opt(&m.pass_cuda, 3),
        opt(&m.kernel, 3),
        med(&m.candidates),
        med(&m.listed),
        med(&m.valid),
        med(&m.invalid),
        med(&m.unknown),
        opt(&m.replan_cpu, 2),
        opt(&m.replan_gpu, 2),
        opt(&m.plan_cpu, 2),
        opt(&m.scratch_lazy_prm, 2),
        opt(&m.scratch_rrt_connect, 2),
    );
    Ok((v, row))
}

/// The scale experiment: one row per `--sizes` entry. Returns the result name too.
fn scale(a: &BenchDynamicArgs) -> Result<(String, Value, String), CliError> {
    let data = crate::mbm::data_dir()?;
    let panda = crate::mbm::load_robot(&data, "panda")?;
    let gpu_name = if a.gpu && crate::gpu::gpu_available() {
        crate::gpu::device_names().into_iter().next()
    } else {
        if a.gpu {
            eprintln!("bench dynamic scale: no CUDA device found, CPU only");
        }
        None
    };
    let setup = ScaleSetup {
        robot: &panda.model,
        group: &panda.group,
        base: panda.model.tree.neutral_state(),
        opts: DynamicRoadmapOptions {
            resolution: a.resolution,
            drm_cell_size: a.drm.then_some(a.cell_size),
            drm_bounds: None,
            threads: a.threads,
            boxes_per_body: 2,
            inner_spheres_per_body: 3,
            ..DynamicRoadmapOptions::default()
        },
        gpu: gpu_name.is_some(),
    };
    let gpu_desc = gpu_name.clone().unwrap_or_else(|| "none (CPU only)".into());
    // Taken before the run: the load average then is other work on the machine.
    let mach = machine(&gpu_desc);
    let mut rows = Vec::new();
    let mut table = String::new();
    for &target in &a.sizes {
        let (v, row) = scale_size(a, &setup, target)?;
        rows.push(v);
        table.push_str(&row);
    }
    let date = mach["date_utc"].as_str().unwrap_or("unknown").to_string();
    let slug: String = gpu_name
        .as_deref()
        .unwrap_or("cpu")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = format!("scale_panda_{slug}_{date}");
    let sizes: Vec<String> = a.sizes.iter().map(|s| s.to_string()).collect();
    let command = format!(
        "gmp bench dynamic --experiment scale --sizes {} --neighbors {} --repetitions {} --resolution {} --drm {} --voxel-map {} --voxel-cpu-edges {} --cell-size {} --gpu {} --brute-force {} --threads {} --out results/dynamic",
        sizes.join(","),
        a.neighbors,
        a.repetitions.unwrap_or(20),
        a.resolution,
        a.drm,
        a.voxel_map,
        a.voxel_cpu_edges,
        a.cell_size,
        a.gpu,
        a.brute_force,
        a.threads
    );
    let v = json!({
        "experiment": "scale",
        "robot": "panda",
        "command": command,
        "machine": mach,
        "gpu": gpu_name,
        "resolution": a.resolution,
        "drm_cell_size": a.drm.then_some(a.cell_size),
        "voxel_map_cell_size": a.voxel_map.then_some(a.cell_size),
        "obstacle": "one 0.2 m box, moved to random poses with centres in [0.2, -0.5, 0.0]..[0.7, 0.5, 0.8] m",
        "sizes": rows,
    });
    let md = format!(
        "# Dynamic roadmap at scale: MBM Panda, {} edges\n\n\
         Command: `{command}`\n\nMachine: {}\n\nGPU: {gpu_desc}\n\n\
         One 0.2 m box is moved {} times to a random pose in front of the robot; medians per move. \
         Builds include the self-collision check of every edge (on the CUDA checker for the GPU \
         build) and the sweep (CPU). `update` is a whole `DynamicRoadmap::update` (old box state \
         taken off, new one labelled, edges relabelled), in parentheses its labelling (the new box's \
         approximation and verdict pass on the roadmap's engine) and host bookkeeping (counters and \
         relabelling) parts; `verdict pass` labels every edge against \
         one obstacle without bookkeeping (brute force = every (edge, body) pair on the CPU; BVH = \
         candidate pairs only, split over the threads; GPU = the `rgg_label` kernel over every pair, \
         wall time with the copies; kernel = CUDA events). Replanning end to end = update + lazy \
         search on the roadmap (Unknown edges of the path checked exactly on the CPU checker, \
         timing and re-validation included, no shortcutting); from scratch = the same query with \
         lazy PRM and RRT-Connect. Successes in parentheses. Voxel map: the DRM map alone \
         ({} m cells, grid around all swept volumes; `DynamicRoadmap::voxel_map_stats`: grid, cells \
         of every edge, cell -> edge lists; the sweep for the grid bounds and the self-collision \
         check not included) of DRM-only builds of the same roadmap: on the CPU threads for its \
         first N edges (N in brackets), on the GPU (`drm_voxel_*` kernels) for the same N edges \
         and for all edges; in parentheses the cells stage (CPU sweep, or the CUDA builder with its \
         copies; the rest is the cell -> edge lists, on the host either way) and the kernels (CUDA \
         events); `same` = the GPU's map of the N edges is identical to the CPU's.\n\n\
         | edges | vertices | build CPU (s) | build GPU (s) | voxel map CPU (s, N edges) | voxel map GPU (s, N edges) | voxel map CPU/GPU | voxel map GPU, all edges (s) | voxel maps same | update CPU (ms: labelling + bookkeeping) | update GPU (ms: labelling + bookkeeping) | CPU/GPU | verdict pass brute force / BVH / GPU (ms) | kernel (ms) | pairs tested (BVH) | edges listed | labels Valid / Invalid / Unknown | replan CPU (ms) | replan GPU (ms) | roadmap search alone (ms) | scratch lazy PRM (ms) | scratch RRT-Connect (ms) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n{table}\n\
         Engine mismatches (labels or verdicts that differ between engines, all sizes): {}.\n",
        sizes.join(", "),
        v["machine"],
        a.repetitions.unwrap_or(20),
        a.cell_size,
        rows.iter()
            .map(|r| r["engine_mismatches"].as_u64().unwrap_or(0))
            .sum::<u64>(),
    );
    Ok((name, v, md))
}
