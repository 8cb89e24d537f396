//! Backend selection: `auto | cpu | cuda | hybrid`.

use super::hybrid::{
    HybridChecker, HYBRID_MIN_WORK_ENV, HYBRID_MIN_WORK_POLYTOPES, HYBRID_MIN_WORK_SPHERES,
};
use super::{Checker, CheckerOptions, CollisionError, CpuChecker, RobotShapes};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Scene;

/// Builds the checker named by `backend` (`auto`, `cpu`, `cuda` or `hybrid`).
///
/// `cuda` runs every check on the GPU and fails with a clear message when no GPU is usable.
/// `hybrid` pairs the CPU checker with the CUDA one ([`HybridChecker`]): calls of at least
/// [`HYBRID_MIN_WORK_SPHERES`] configurations ([`HYBRID_MIN_WORK_POLYTOPES`] for polytope
/// models; `GMP_HYBRID_MIN` sets another) go to the GPU, smaller ones to the CPU, which
/// answers a planning query's small checks sooner than a GPU round trip; it needs a GPU like
/// `cuda`. `auto` is `hybrid` when a GPU is present (falling back to the CPU if the CUDA
/// backend cannot start) and `cpu` otherwise, and prints exactly one line on stderr saying
/// which backend it chose and why.
pub fn make_checker(
    backend: &str,
    robot: &RobotModel,
    group: &PlanningGroup,
    base_state: &[f64],
    scene: &Scene,
    opts: CheckerOptions,
) -> Result<Box<dyn Checker>, CollisionError> {
    let cpu = || CpuChecker::new(robot, group, base_state, scene, opts);
    let hybrid = || -> Result<HybridChecker, CollisionError> {
        let gpu = crate::gpu::CudaChecker::new(robot, group, base_state, scene, opts)?;
        let min_work = match std::env::var(HYBRID_MIN_WORK_ENV) {
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| CollisionError::Backend {
                    backend: "hybrid".into(),
                    message: format!(
                        "{HYBRID_MIN_WORK_ENV} must be a whole number of configurations, got '{v}'"
                    ),
                })?,
            Err(_) => match opts.shapes {
                RobotShapes::Spheres => HYBRID_MIN_WORK_SPHERES,
                RobotShapes::Polytopes => HYBRID_MIN_WORK_POLYTOPES,
            },
        };
        HybridChecker::new(Box::new(cpu()?), Box::new(gpu), min_work)
    };
    match backend {
        "cpu" => Ok(Box::new(cpu()?)),
        "cuda" => Ok(Box::new(crate::gpu::CudaChecker::new(
            robot, group, base_state, scene, opts,
        )?)),
        "hybrid" => Ok(Box::new(hybrid()?)),
        "auto" => {
            let n = crate::gpu::device_count();
            if n == 0 {
                eprintln!("gmp: backend auto -> cpu (no CUDA device found)");
                return Ok(Box::new(cpu()?));
            }
            match hybrid() {
                Ok(c) => {
                    eprintln!(
                        "gmp: backend auto -> hybrid (calls of at least {} configurations on {} CUDA device(s), smaller ones on the CPU)",
                        c.min_work(),
                        n
                    );
                    Ok(Box::new(c))
                }
                Err(e) => {
                    eprintln!("gmp: backend auto -> cpu (the CUDA backend could not start: {e})");
                    Ok(Box::new(cpu()?))
                }
            }
        }
        other => Err(CollisionError::Backend {
            backend: other.into(),
            message: "unknown backend; expected auto, cpu, cuda or hybrid".into(),
        }),
    }
}
