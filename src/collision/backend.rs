//! Backend selection: `auto | cpu | cuda | hybrid`.

use super::hybrid::{
    HybridChecker, LargeBuilder, HYBRID_MIN_WORK_ENV, HYBRID_MIN_WORK_POLYTOPES,
    HYBRID_MIN_WORK_SPHERES,
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
/// `cuda`, and starts the CUDA backend at its first large call (every call goes to the CPU,
/// with one line on stderr, if it cannot start). `auto` is `hybrid` when a GPU is present and
/// `cpu` otherwise, and prints exactly one line on stderr saying which backend it chose and
/// why.
pub fn make_checker(
    backend: &str,
    robot: &RobotModel,
    group: &PlanningGroup,
    base_state: &[f64],
    scene: &Scene,
    opts: CheckerOptions,
) -> Result<Box<dyn Checker>, CollisionError> {
    let cpu = || CpuChecker::new(robot, group, base_state, scene, opts);
    // The CUDA side starts at the first large call (see `HybridChecker::lazy`).
    let hybrid = || -> Result<HybridChecker, CollisionError> {
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
        let (robot, group, base, scene) = (
            robot.clone(),
            group.clone(),
            base_state.to_vec(),
            scene.clone(),
        );
        let build: LargeBuilder = Box::new(move || {
            let gpu = crate::gpu::CudaChecker::new(&robot, &group, &base, &scene, opts)?;
            Ok(Box::new(gpu) as Box<dyn Checker>)
        });
        Ok(HybridChecker::lazy(Box::new(cpu()?), build, min_work))
    };
    match backend {
        "cpu" => Ok(Box::new(cpu()?)),
        "cuda" => Ok(Box::new(crate::gpu::CudaChecker::new(
            robot, group, base_state, scene, opts,
        )?)),
        "hybrid" => {
            if crate::gpu::device_count() == 0 {
                return Err(CollisionError::Backend {
                    backend: "hybrid".into(),
                    message: "its large batches need the cuda backend, and no CUDA device was found (libcuda missing or no GPU visible)".into(),
                });
            }
            Ok(Box::new(hybrid()?))
        }
        "auto" => {
            let n = crate::gpu::device_count();
            if n == 0 {
                eprintln!("gmp: backend auto -> cpu (no CUDA device found)");
                return Ok(Box::new(cpu()?));
            }
            let c = hybrid()?;
            eprintln!(
                "gmp: backend auto -> hybrid (calls of at least {} configurations on {} CUDA device(s), the GPU side started at the first of them; smaller ones on the CPU)",
                c.min_work(),
                n
            );
            Ok(Box::new(c))
        }
        other => Err(CollisionError::Backend {
            backend: other.into(),
            message: "unknown backend; expected auto, cpu, cuda or hybrid".into(),
        }),
    }
}

/// Builds the CUDA checker that `backend` would start for `robot` (in an empty scene) and
/// drops it, so that a later one starts quickly: the robot-specialised kernels' PTX goes to
/// the kernel cache ([`crate::gpu::kernels::compile_cached`]) and the driver keeps its
/// translation to machine code (its own cache), which on a fresh machine takes tens of seconds
/// (`results/spheres/kernel_cache_H100_2026-11-28/`). The time it took, or `None` where
/// `backend` would not use the GPU (`cpu`, or `auto` without a GPU). Fails as
/// [`make_checker`] fails (`cuda` or `hybrid` without a GPU, an unknown backend).
pub fn warm_up(
    backend: &str,
    robot: &RobotModel,
    group: &PlanningGroup,
    base_state: &[f64],
    opts: CheckerOptions,
) -> Result<Option<std::time::Duration>, CollisionError> {
    match backend {
        "cpu" => return Ok(None),
        "auto" if crate::gpu::device_count() == 0 => return Ok(None),
        "auto" | "cuda" | "hybrid" => {}
        other => {
            return Err(CollisionError::Backend {
                backend: other.into(),
                message: "unknown backend (expected auto, cpu, cuda or hybrid)".into(),
            })
        }
    }
    let t = std::time::Instant::now();
    let checker = crate::gpu::CudaChecker::new(robot, group, base_state, &Scene::default(), opts)?;
    drop(checker);
    Ok(Some(t.elapsed()))
}
