//! `gmp bench dynamic`: the dynamic-roadmap benchmarks.
//!
//! * `--experiment seed003`: the Red-Green-Gray seed experiment. A 6-DOF arm in a
//!   32 x 32 x 16 voxel workspace, one rectangular prism per size placed at random
//!   orientations; after each update every edge is checked exactly and the DRM and RGG labels
//!   are scored against that ground truth.
//! * `--experiment scale`: the MotionBenchMaker Panda with a roadmap of `--vertices` vertices;
//!   time per update for one obstacle move, and replanning with the updated roadmap versus
//!   planning from scratch (lazy PRM) after the move.
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
use crate::collision::{Checker, CheckerOptions, CpuChecker, MotionBatch};
use crate::planners::dynamic_roadmap::{
    DynamicRoadmap, DynamicRoadmapOptions, LabelMethod, UpdateStats,
};
use crate::planners::{plan, PlanRequest, PlannerId};
use crate::roadmap::EdgeLabel;
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
    /// Roadmap vertices (scale).
    #[arg(long, default_value_t = 1500)]
    pub vertices: usize,
    /// Neighbours per vertex (scale).
    #[arg(long, default_value_t = 10)]
    pub neighbors: usize,
    /// Build the DRM voxel map too (scale; memory and time grow quickly with the roadmap).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub drm: bool,
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
        "scale" => {
            let (v, md) = scale(a)?;
            (format!("scale_panda_{}", a.vertices), v, md)
        }
        other => {
            return Err(CliError(format!(
                "unknown experiment '{other}' (expected seed003 or scale)"
            )))
        }
    };
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
        let jp = dir.join(format!("{name}.json"));
        std::fs::write(&jp, serde_json::to_string_pretty(&v)?)
            .map_err(|e| CliError(format!("cannot write {}: {e}", jp.display())))?;
        let mp = dir.join(format!("{name}.md"));
        std::fs::write(&mp, md)
            .map_err(|e| CliError(format!("cannot write {}: {e}", mp.display())))?;
    }
    Ok(v)
}

fn machine() -> Value {
    let secs = crate::report::unix_now();
    let mut m = crate::report::machine_info();
    m["unix_time"] = json!(secs);
    m["date_utc"] = json!(crate::report::utc_date(secs));
    m["gpu"] = json!("none (CPU only; no GPU path yet)");
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
        machine(),
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
        "machine": machine(),
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

fn scale(a: &BenchDynamicArgs) -> Result<(Value, String), CliError> {
    let data = crate::mbm::data_dir()?;
    let panda = crate::mbm::load_robot(&data, "panda")?;
    let robot = &panda.model;
    let group = &panda.group;
    let base = robot.tree.neutral_state();
    let opts = DynamicRoadmapOptions {
        resolution: a.resolution,
        drm_cell_size: a.drm.then_some(a.cell_size),
        drm_bounds: None,
        threads: a.threads,
        boxes_per_body: 2,
        inner_spheres_per_body: 3,
        ..DynamicRoadmapOptions::default()
    };
    let t0 = Instant::now();
    let mut dr = DynamicRoadmap::sample(robot, group, &base, a.vertices, a.neighbors, a.seed, opts)
        .map_err(|e| CliError(e.to_string()))?;
    let build = t0.elapsed();
    let n_edges = dr.roadmap().num_edges();
    let reps = a.repetitions.unwrap_or(20);
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
    dr.update(&scene).map_err(|e| CliError(e.to_string()))?;
    let mut checker = CpuChecker::new(
        robot,
        group,
        &base,
        &scene,
        CheckerOptions {
            threads: a.threads,
            ..CheckerOptions::default()
        },
    )?;
    let nv = dr.roadmap().num_vertices();
    let (mut t_drm, mut t_rgg, mut t_upd) = (Vec::new(), Vec::new(), Vec::new());
    let (mut t_replan, mut t_scratch) = (Vec::new(), Vec::new());
    let (mut replan_ok, mut scratch_ok) = (0usize, 0usize);
    let mut candidates = Vec::new();
    for rep in 0..reps {
        let pose = Isometry3::from_parts(
            random_position(&mut rng, &lo, &hi).into(),
            random_rotation(&mut rng),
        );
        scene.set_pose("box", pose)?;
        let t = Instant::now();
        let st = dr.update(&scene).map_err(|e| CliError(e.to_string()))?;
        t_upd.push(ms(t.elapsed()));
        t_drm.push(ms(st.drm_time));
        t_rgg.push(ms(st.rgg_time));
        candidates.push(st.rgg_candidates as f64);
        checker.sync_scene(&scene);
        // A query between two roadmap vertices that are valid in the new scene.
        let (s, g) = loop {
            let s = rng.random_range(0..nv);
            let g = rng.random_range(0..nv);
            let (Some(qs), Some(qg)) = (dr.roadmap().vertex(s), dr.roadmap().vertex(g)) else {
                continue;
            };
            if s != g && checker.check_config(qs)? && checker.check_config(qg)? {
                break (qs.to_vec(), qg.to_vec());
            }
        };
        let mut req = PlanRequest::new(s.clone(), g.clone(), PlannerId::LazyPrm);
        req.resolution = a.resolution;
        req.seed = a.seed + rep as u64;
        req.time_limit = Duration::from_secs(5);
        req.shortcut_rounds = 0;
        let t = Instant::now();
        if dr.plan(&checker, &req).is_ok() {
            replan_ok += 1;
            t_replan.push(ms(t.elapsed()));
        }
        let t = Instant::now();
        if plan(&checker, &req).is_ok() {
            scratch_ok += 1;
            t_scratch.push(ms(t.elapsed()));
        }
    }
    let (cells, boxes, caps) = dr.sizes();
    let v = json!({
        "experiment": "scale",
        "robot": "panda",
        "machine": machine(),
        "roadmap": {"vertices": nv, "edges": n_edges},
        "resolution": a.resolution,
        "drm_cell_size": a.drm.then_some(a.cell_size),
        "build_ms": ms(build),
        "precomputed": {"voxel_map_entries": cells, "outer_boxes": boxes, "inner_capsules": caps},
        "moves": reps,
        "update_ms": {"drm": stats_of(t_drm), "rgg": stats_of(t_rgg), "total": stats_of(t_upd)},
        "rgg_candidates_per_update": stats_of(candidates),
        "replan_with_dynamic_roadmap_ms": stats_of(t_replan),
        "replan_successes": replan_ok,
        "plan_from_scratch_lazy_prm_ms": stats_of(t_scratch),
        "scratch_successes": scratch_ok,
        "gpu": "not measured: no GPU path yet",
    });
    let g = |k: &str, m: &str| v[k][m]["median"].as_f64().unwrap_or(f64::NAN);
    let md = format!(
        "# Dynamic roadmap at scale: MBM Panda, {nv} vertices, {n_edges} edges (CPU)\n\n\
         Command: `gmp bench dynamic --experiment scale --vertices {} --neighbors {} --drm {} \
         --resolution {} --out results/dynamic`\n\nMachine: {}\n\n\
         Build (self-collision check, sweep, maps): {:.0} ms. One 0.2 m box moved to {reps} random \
         poses; per move:\n\n\
         | quantity | median |\n|---|---|\n\
         | DRM update (ms) | {:.3} |\n| RGG update (ms) | {:.3} |\n| whole update (ms) | {:.3} |\n\
         | replan with the updated dynamic roadmap, end to end (ms, {replan_ok} solved) | {:.2} |\n\
         | plan from scratch, lazy PRM, end to end (ms, {scratch_ok} solved) | {:.2} |\n\n\
         Both plans skip shortcutting and include timing and re-validation.\n\n\
         GPU: not measured (no GPU path yet).\n",
        a.vertices,
        a.neighbors,
        a.drm,
        a.resolution,
        v["machine"],
        ms(build),
        g("update_ms", "drm"),
        g("update_ms", "rgg"),
        g("update_ms", "total"),
        v["replan_with_dynamic_roadmap_ms"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN),
        v["plan_from_scratch_lazy_prm_ms"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN),
    );
    Ok((v, md))
}
