//! Backend selection: `auto | cpu | cuda`.

use super::{Checker, CheckerOptions, CollisionError, CpuChecker};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Scene;

/// Builds the checker named by `backend` (`auto`, `cpu` or `cuda`).
///
/// `cuda` fails with a clear message when no GPU is usable. `auto` picks the GPU when one is
/// present (falling back to the CPU if the CUDA backend cannot start) and prints exactly one
/// line on stderr saying which backend it chose and why.
pub fn make_checker(
    backend: &str,
    robot: &RobotModel,
    group: &PlanningGroup,
    base_state: &[f64],
    scene: &Scene,
    opts: CheckerOptions,
) -> Result<Box<dyn Checker>, CollisionError> {
    match backend {
        "cpu" => Ok(Box::new(CpuChecker::new(
            robot, group, base_state, scene, opts,
        )?)),
        "cuda" => Ok(Box::new(crate::gpu::CudaChecker::new(
            robot, group, base_state, scene, opts,
        )?)),
        "auto" => {
            let n = crate::gpu::device_count();
            if n == 0 {
                eprintln!("gmp: backend auto -> cpu (no CUDA device found)");
                return Ok(Box::new(CpuChecker::new(
                    robot, group, base_state, scene, opts,
                )?));
            }
            match crate::gpu::CudaChecker::new(robot, group, base_state, scene, opts) {
                Ok(c) => {
                    eprintln!(
                        "gmp: backend auto -> cuda ({} device(s): {})",
                        n,
                        c.device_names().join(", ")
                    );
                    Ok(Box::new(c))
                }
                Err(e) => {
                    eprintln!("gmp: backend auto -> cpu (the CUDA backend could not start: {e})");
                    Ok(Box::new(CpuChecker::new(
                        robot, group, base_state, scene, opts,
                    )?))
                }
            }
        }
        other => Err(CollisionError::Backend {
            backend: other.into(),
            message: "unknown backend; expected auto, cpu or cuda".into(),
        }),
    }
}
