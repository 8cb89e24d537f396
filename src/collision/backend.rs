//! Backend selection: `auto | cpu | cuda`.

use super::{Checker, CheckerOptions, CollisionError, CpuChecker};
use crate::robot::{PlanningGroup, RobotModel};
use crate::scene::Scene;

/// Builds the checker named by `backend` (`auto`, `cpu` or `cuda`). `auto` picks the GPU when
/// one is usable and says which backend it chose in one line on stderr.
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
        "cuda" => Err(CollisionError::Backend {
            backend: "cuda".into(),
            message: "this build has no CUDA collision backend yet; use --backend cpu or auto"
                .into(),
        }),
        "auto" => {
            eprintln!("gmp: backend auto -> cpu (no CUDA collision backend in this build)");
            Ok(Box::new(CpuChecker::new(
                robot, group, base_state, scene, opts,
            )?))
        }
        other => Err(CollisionError::Backend {
            backend: other.into(),
            message: "unknown backend; expected auto, cpu or cuda".into(),
        }),
    }
}
