//! `gmp demo`: the main job on the bundled robot (`urdf/gmp_arm.urdf`) and scene
//! (`config/default_scene.yaml`), which are compiled into the binary so that it runs from
//! any folder.

use std::time::Instant;

use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::CliError;
use crate::collision::{CheckerOptions, ConfigBatch, MotionBatch};
use crate::robot::{LoadOptions, RobotModel};
use crate::scene::Scene;

/// The bundled robot's URDF.
pub const BUNDLED_URDF: &str = include_str!("../../urdf/gmp_arm.urdf");
/// The bundled robot's SRDF.
pub const BUNDLED_SRDF: &str = include_str!("../../urdf/gmp_arm.srdf");
/// The bundled scene.
pub const BUNDLED_SCENE: &str = include_str!("../../config/default_scene.yaml");

/// `gmp demo` arguments.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Backend: auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Random configurations to check.
    #[arg(long, default_value_t = 20000)]
    pub configs: usize,
    /// Random motions to check.
    #[arg(long, default_value_t = 2000)]
    pub motions: usize,
    /// Seed of the random samples.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Loads the bundled robot and scene.
pub fn bundled() -> Result<(RobotModel, Scene), CliError> {
    let robot = RobotModel::from_urdf_str(
        BUNDLED_URDF,
        None,
        Some(BUNDLED_SRDF),
        &LoadOptions::default(),
    )?;
    let scene = Scene::from_yaml_str(BUNDLED_SCENE, std::path::Path::new("."))?;
    Ok((robot, scene))
}

/// Runs the demo and returns its report.
pub fn run(a: &DemoArgs) -> Result<Value, CliError> {
    let (robot, scene) = bundled()?;
    let group = robot.default_group();
    let base = robot.tree.neutral_state();
    let checker = crate::collision::make_checker(
        &a.backend,
        &robot,
        &group,
        &base,
        &scene,
        CheckerOptions::default(),
    )?;
    let space = &group.space;
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let sample = |rng: &mut ChaCha8Rng| -> Vec<f64> {
        (0..space.dof())
            .map(|j| rng.random_range(space.lower[j]..=space.upper[j]))
            .collect()
    };
    let mut configs = ConfigBatch::with_capacity(space.dof(), a.configs);
    for _ in 0..a.configs {
        configs.push(&sample(&mut rng))?;
    }
    let t0 = Instant::now();
    let valid = checker.check_configs(&configs)?;
    let t_configs = t0.elapsed().as_secs_f64();
    let free_configs: Vec<&[f64]> = configs
        .rows()
        .zip(&valid)
        .filter(|(_, v)| **v)
        .map(|(r, _)| r)
        .collect();
    let mut motions = MotionBatch::new(space.dof());
    for i in 0..a.motions.min(free_configs.len().saturating_sub(1)) {
        motions.push(
            free_configs[i],
            free_configs[(i * 7 + 1) % free_configs.len()],
        )?;
    }
    let resolution = 0.02;
    let t1 = Instant::now();
    let mvalid = checker.check_motions(&motions, resolution)?;
    let t_motions = t1.elapsed().as_secs_f64();
    let n_valid = valid.iter().filter(|v| **v).count();
    let m_valid = mvalid.iter().filter(|v| **v).count();
    Ok(json!({
        "robot": robot.tree.name,
        "group": group.name,
        "joints": space.names,
        "obstacles": scene.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
        "backend": format!("{:?}", checker.backend()).to_lowercase(),
        "configurations": {"checked": configs.len(), "collision_free": n_valid, "seconds": t_configs, "per_second": configs.len() as f64 / t_configs.max(1e-9)},
        "motions": {"checked": motions.len(), "collision_free": m_valid, "resolution": resolution, "seconds": t_motions, "per_second": motions.len() as f64 / t_motions.max(1e-9)},
    }))
}
