//! The CUDA backend against the CPU reference.
//!
//! 1. NVRTC compiles every kernel (runs in CI: needs only libnvrtc, no GPU; skips with a message
//!    when libnvrtc cannot be found — `source scripts/nvrtc_env.sh` provides it).
//! 2. Parity: random configurations and motions on the MotionBenchMaker Panda, UR5 and Fetch
//!    scenes, every verdict compared with the CPU (`GMP_PARITY_CONFIGS`, default 20000, and
//!    `GMP_PARITY_MOTIONS`, default 2000, per robot). Skips with a message without a GPU.
//! 3. Scene updates (move, remove, add obstacles) followed by the same comparison.

mod common;

use gpu_motion_planner::collision::{
    Checker, CheckerOptions, ConfigBatch, CpuChecker, MotionBatch, RobotShapes,
};
use gpu_motion_planner::gpu::{self, kernels, CudaChecker, MotionKernel};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn nvrtc_compiles_every_kernel() {
    if !kernels::nvrtc_available() {
        eprintln!(
            "SKIP nvrtc_compiles_every_kernel: libnvrtc not found (GMP_NVRTC_LIB={:?}); \
             run `source scripts/nvrtc_env.sh` first",
            std::env::var("GMP_NVRTC_LIB").ok()
        );
        return;
    }
    // The collision translation unit, for every architecture we may meet.
    for arch in ["compute_75", "compute_80", "compute_90"] {
        let ptx = kernels::compile_collision(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        let text = ptx.to_src();
        // GMP_PTX_OUT=<folder> keeps the PTX (e.g. for `ptxas -arch=sm_90 -v`).
        if let Ok(dir) = std::env::var("GMP_PTX_OUT") {
            let _ = std::fs::write(format!("{dir}/collision_{arch}.ptx"), &text);
        }
        for k in kernels::KERNEL_NAMES {
            assert!(
                text.contains(&format!(".entry {k}(")),
                "{arch}: kernel {k} missing from the PTX"
            );
        }
        // The twin must not contain fused multiply-adds (bit-identical to the CPU).
        assert!(
            !text.contains("fma.rn.f32"),
            "{arch}: the PTX contains fma.rn.f32; the kernels must be built with --fmad=false"
        );
    }
    // Every source file on its own (headers compile as an empty translation unit).
    for (name, src) in kernels::SOURCES {
        let unit = if name.ends_with(".cuh") {
            src.to_string()
        } else {
            kernels::collision_source()
        };
        kernels::compile(&unit, "compute_90").unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // A syntax error comes back as an error value carrying NVRTC's log.
    let err = kernels::compile("extern \"C\" __global__ void broken( {", "compute_90")
        .expect_err("broken source must not compile");
    assert!(err.contains("NVRTC"), "error should carry the NVRTC log: {err}");
    eprintln!("nvrtc: every kernel compiles for compute_75/80/90");
}
