//! `gmp bench allowed`: what allowed collisions cost ([`crate::collision::allowed`]), side by
//! side in one run, on the bundled arm and scene.
//!
//! Three worlds on the same random configurations and motions, per backend:
//! - `none`: no entries (one checker);
//! - `link pair`: `base_link` may touch `forearm_link` (the robot's allowed pairs change, still
//!   one checker);
//! - `obstacle`: the tool's links (`flange_link`, `wrist_2_link`) may touch the scene's
//!   `table`, so the table leaves the main checker and a second checker tests the rest of the
//!   robot against it ([`crate::collision::AllOf`]).
//!
//! Reported: configurations/s and motions/s (the median of `--repeats` timed calls after one
//! untimed call), each world's rate over the `none` rate of the same backend, the share of free
//! items, and how many verdicts differ from the CPU's for the same world. Prints the JSON;
//! writes `<out>/allowed_<date>.json` and `.md` with the machine and the GPU. A benchmark, not
//! a test: it asserts nothing.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::CliError;
use crate::collision::allowed::AllowedCollisions;
use crate::collision::{Checker, CheckerOptions, ConfigBatch, MotionBatch};
use crate::scene::AllowedCollision;

/// `gmp bench allowed` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchAllowedArgs {
    /// Random configurations per call.
    #[arg(long, default_value_t = 200_000)]
    pub configs: usize,
    /// Random motions per call.
    #[arg(long, default_value_t = 20_000)]
    pub motions: usize,
    /// Motion check resolution (rad).
    #[arg(long, default_value_t = 0.02)]
    pub resolution: f64,
    /// Backends (cpu, cuda, hybrid); cuda and hybrid need a GPU.
    #[arg(long, value_delimiter = ',', default_value = "cpu")]
    pub backends: Vec<String>,
    /// Timed calls per measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Seed of the configurations and motions.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Results folder (nothing written without it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The worlds compared: name and entries.
fn worlds() -> Vec<(&'static str, Vec<AllowedCollision>)> {
    let entry = |a: &str, b: &str| AllowedCollision {
        a: a.into(),
        b: b.into(),
        allowed: true,
    };
    vec![
        ("none", Vec::new()),
        ("link pair", vec![entry("base_link", "forearm_link")]),
        (
            "obstacle",
            vec![
                entry("flange_link", "table"),
                entry("wrist_2_link", "table"),
            ],
        ),
    ]
}

/// The median of `repeats` timings of `f` (seconds) after one untimed call, with its answer.
fn timed<T>(
    repeats: usize,
    mut f: impl FnMut() -> Result<T, CliError>,
) -> Result<(f64, T), CliError> {
    let mut answer = f()?;
    let mut times = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        answer = f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], answer))
}

/// Runs the benchmark (see the module documentation).
pub fn run(a: &BenchAllowedArgs) -> Result<Value, CliError> {
    for b in &a.backends {
        if !matches!(b.as_str(), "cpu" | "cuda" | "hybrid") {
            return Err(CliError(format!(
                "bench allowed: unknown backend '{b}' in --backends (cpu, cuda, hybrid)"
            )));
        }
        if b != "cpu" && !crate::gpu::gpu_available() {
            return Err(CliError(format!(
                "bench allowed: --backends includes {b} but no CUDA device is available"
            )));
        }
    }
    if a.configs == 0 || a.motions == 0 || a.resolution.is_nan() || a.resolution <= 0.0 {
        return Err(CliError(
            "bench allowed: --configs and --motions must be > 0, --resolution positive".into(),
        ));
    }
    let (robot, scene) = super::demo::bundled()?;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let space = &group.space;
    let dof = space.dof();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let mut uniform = || -> Vec<f64> {
        (0..dof)
            .map(|k| rng.random_range(space.lower[k]..space.upper[k]))
            .collect()
    };
    let mut configs = ConfigBatch::with_capacity(dof, a.configs);
    for _ in 0..a.configs {
        configs.push(&uniform())?;
    }
    let mut motions = MotionBatch::new(dof);
    for _ in 0..a.motions {
        motions.push(&uniform(), &uniform())?;
    }

    let mut rows: Vec<Value> = Vec::new();
    let mut cpu_verdicts: Vec<(Vec<bool>, Vec<bool>)> = Vec::new();
    for backend in std::iter::once("cpu").chain(
        a.backends
            .iter()
            .map(String::as_str)
            .filter(|b| *b != "cpu"),
    ) {
        let mut none_rates = (0.0, 0.0);
        for (w, (world, entries)) in worlds().into_iter().enumerate() {
            let acm = AllowedCollisions::from_entries(&robot, &scene, &entries)
                .map_err(|e| CliError(format!("bench allowed: {e}")))?;
            let t = Instant::now();
            let checker: Box<dyn Checker> = acm.checker(
                backend,
                &robot,
                &group,
                &base,
                &scene,
                CheckerOptions::default(),
            )?;
            let build = t.elapsed().as_secs_f64();
            // An obstacle some links may touch adds the second checker.
            let on_obstacle = |n: &str| scene.get(n).is_some();
            let parts = if entries
                .iter()
                .any(|e| on_obstacle(&e.a) || on_obstacle(&e.b))
            {
                2
            } else {
                1
            };
            let (tc, vc) = timed(a.repeats, || Ok(checker.check_configs(&configs)?))?;
            let (tm, vm) = timed(a.repeats, || {
                Ok(checker.check_motions(&motions, a.resolution)?)
            })?;
            let rates = (a.configs as f64 / tc, a.motions as f64 / tm);
            if w == 0 {
                none_rates = rates;
            }
            let differ = if backend == "cpu" {
                cpu_verdicts.push((vc.clone(), vm.clone()));
                (0, 0)
            } else {
                let (cc, cm) = &cpu_verdicts[w];
                (
                    vc.iter().zip(cc).filter(|(x, y)| x != y).count(),
                    vm.iter().zip(cm).filter(|(x, y)| x != y).count(),
                )
            };
            let share = |v: &[bool]| v.iter().filter(|&&x| x).count() as f64 / v.len() as f64;
            rows.push(json!({
                "backend": backend,
                "world": world,
                "checkers": parts,
                "build_s": build,
                "configs_per_s": rates.0,
                "motions_per_s": rates.1,
                "configs_vs_none": rates.0 / none_rates.0,
                "motions_vs_none": rates.1 / none_rates.1,
                "free_configs": share(&vc),
                "free_motions": share(&vm),
                "configs_differing_from_cpu": differ.0,
                "motions_differing_from_cpu": differ.1,
            }));
        }
    }

    let device = if a.backends.iter().any(|b| b != "cpu") {
        crate::gpu::device_names().join(" + ")
    } else {
        "cpu-only".to_string()
    };
    let date = crate::report::today();
    let v = json!({
        "benchmark": "allowed",
        "date": date,
        "machine": crate::report::machine_info(),
        "device": device,
        "robot": "bundled gmp_arm, bundled scene",
        "configs": a.configs,
        "motions": a.motions,
        "resolution": a.resolution,
        "repeats": a.repeats,
        "seed": a.seed,
        "rows": rows,
    });
    let mut md = format!(
        "# Allowed collisions: cost ({date}, {device})\n\n\
         Bundled arm and scene; {} random configurations and {} random motions (resolution \
         {}) per call, median of {} timed calls. `obstacle`: the tool's links may touch the \
         table (two checkers joined); `link pair`: base_link may touch forearm_link.\n\n\
         | backend | world | checkers | configs/s | vs none | motions/s | vs none | free configs | free motions | differing from cpu (configs, motions) |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        a.configs, a.motions, a.resolution, a.repeats
    );
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {:.3e} | {:.2} | {:.3e} | {:.2} | {:.3} | {:.3} | {}, {} |\n",
            r["backend"].as_str().unwrap_or("?"),
            r["world"].as_str().unwrap_or("?"),
            r["checkers"],
            r["configs_per_s"].as_f64().unwrap_or(0.0),
            r["configs_vs_none"].as_f64().unwrap_or(0.0),
            r["motions_per_s"].as_f64().unwrap_or(0.0),
            r["motions_vs_none"].as_f64().unwrap_or(0.0),
            r["free_configs"].as_f64().unwrap_or(0.0),
            r["free_motions"].as_f64().unwrap_or(0.0),
            r["configs_differing_from_cpu"],
            r["motions_differing_from_cpu"],
        ));
    }
    if let Some(dir) = &a.out {
        super::write_bench_results(dir, &format!("allowed_{date}"), &v, &md)?;
    }
    Ok(v)
}
