//! `gmp bench ik`: how often and how fast the inverse kinematics of pose goals
//! ([`crate::robot::ik`]) reaches poses that are reachable by construction: the tip poses of
//! random configurations within the limits of each MBM robot's planning group, solved from
//! the neutral state as a planning request would (the start first, then random starts), for
//! full poses and for positions only. Kinematics only: no collision check. Writes
//! `<out>/ik_<date>.json` and `.md`.
//!
//! A benchmark, not a test: it measures and reports, it asserts nothing.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::CliError;
use crate::robot::ik::{default_tip_link, IkOptions, IkSolver, PoseTarget};

/// `gmp bench ik` arguments.
#[derive(Args, Debug, Clone)]
pub struct BenchIkArgs {
    /// Robots (panda, ur5, fetch).
    #[arg(long, value_delimiter = ',', default_value = "panda,ur5,fetch")]
    pub robots: Vec<String>,
    /// Target poses per robot and goal kind.
    #[arg(long, default_value_t = 200)]
    pub poses: usize,
    /// Seed of the target configurations and of the solver's random starts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Starting configurations at most per pose (the neutral state first).
    #[arg(long = "ik-starts", default_value_t = IkOptions::default().starts)]
    pub ik_starts: usize,
    /// Results folder (nothing written without it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Milliseconds of `times` (seconds): median, mean, p95 and max.
fn time_stats(mut times: Vec<f64>) -> Value {
    if times.is_empty() {
        return Value::Null;
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize] * 1e3;
    let mean = times.iter().sum::<f64>() / times.len() as f64 * 1e3;
    json!({"median_ms": at(0.5), "mean_ms": mean, "p95_ms": at(0.95), "max_ms": at(1.0)})
}

/// Runs `gmp bench ik`.
pub fn run(a: &BenchIkArgs) -> Result<Value, CliError> {
    if a.poses == 0 || a.ik_starts == 0 {
        return Err(CliError(
            "--poses and --ik-starts must be at least 1".into(),
        ));
    }
    let data = crate::mbm::data_dir()?;
    let mut rows = Vec::new();
    let mut md = String::from(
        "| robot | goal | solved | time median / mean / p95 / max (ms) | worst position error (m) | worst orientation error (rad) |\n|---|---|---|---|---|---|\n",
    );
    for robot in &a.robots {
        let r = crate::mbm::load_robot(&data, robot)?;
        let (model, group) = (&r.model, &r.group);
        let tip = default_tip_link(model, group)
            .ok_or_else(|| CliError(format!("{robot}: group '{}' has no tip", group.name)))?;
        let base = model.tree.neutral_state();
        let start = group.config_of(&base);
        let space = &group.space;
        for kind in ["pose", "position"] {
            let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
            let (mut solved, mut times) = (0usize, Vec::with_capacity(a.poses));
            let (mut worst_p, mut worst_r) = (0.0f64, 0.0f64);
            for i in 0..a.poses {
                let q = space.sample_uniform(&mut rng);
                let pose = model.tree.forward_kinematics(&group.full_state(&base, &q))[tip];
                let target = match kind {
                    "pose" => PoseTarget::pose(tip, pose),
                    _ => PoseTarget::position(tip, pose.translation.vector),
                };
                let solver = IkSolver::new(model, group, &base, target)
                    .map_err(|e| CliError(format!("{robot}: {e}")))?;
                let opts = IkOptions {
                    seed: a.seed.wrapping_add(i as u64),
                    starts: a.ik_starts,
                    max_solutions: 1,
                    ..IkOptions::default()
                };
                let t = Instant::now();
                let sols = solver
                    .solve(Some(&start), &opts)
                    .map_err(|e| CliError(format!("{robot}: {e}")))?;
                times.push(t.elapsed().as_secs_f64());
                if let Some(s) = sols.first() {
                    solved += 1;
                    worst_p = worst_p.max(s.position_error);
                    worst_r = worst_r.max(s.orientation_error);
                }
            }
            let stats = time_stats(times);
            md.push_str(&format!(
                "| {robot} | {kind} | {solved} / {} | {:.2} / {:.2} / {:.2} / {:.2} | {worst_p:.1e} | {worst_r:.1e} |\n",
                a.poses,
                stats["median_ms"].as_f64().unwrap_or(f64::NAN),
                stats["mean_ms"].as_f64().unwrap_or(f64::NAN),
                stats["p95_ms"].as_f64().unwrap_or(f64::NAN),
                stats["max_ms"].as_f64().unwrap_or(f64::NAN),
            ));
            rows.push(json!({
                "robot": robot,
                "group": group.name,
                "link": model.tree.links[tip].name,
                "goal": kind,
                "poses": a.poses,
                "solved": solved,
                "time": stats,
                "worst_position_error": worst_p,
                "worst_orientation_error": worst_r,
            }));
        }
    }
    let date = crate::report::today();
    let v = json!({
        "benchmark": "ik",
        "date": date,
        "machine": crate::report::machine_info(),
        "threads": rayon::current_num_threads(),
        "seed": a.seed,
        "ik_starts": a.ik_starts,
        "results": rows,
    });
    if let Some(dir) = &a.out {
        super::write_bench_results(dir, &format!("ik_{date}"), &v, &md)?;
    }
    Ok(v)
}
