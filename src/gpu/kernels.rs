//! The CUDA C sources (embedded at build time) and their NVRTC compilation.
//!
//! `kernels/common.cuh` is the line-by-line twin of the CPU reference arithmetic;
//! `kernels/collision.cu` holds the collision and forward-kinematics kernels and `kernels/drm.cu`
//! the dynamic-roadmap kernels (labels and voxel map). Each `.cu` file is concatenated after `common.cuh` into one translation unit so
//! that nothing has to be found on disk at run time.

use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

/// `kernels/common.cuh`: deterministic math, GJK and the per-configuration validity test.
pub const COMMON_CUH: &str = include_str!("../../kernels/common.cuh");
/// `kernels/collision.cu`: `check_configs`, `check_motions_naive`, `check_motions_balanced`,
/// `fk_frames`, `check_configs_multi`, `check_motions_balanced_multi` (items of several
/// scenes in one launch, `src/gpu/hub.rs`) and `check_configs_warp`,
/// `check_motions_balanced_warp` (one warp per item, for small batches), `check_motions_tiled`
/// (neighbouring ranks of one motion side by side in a warp), `sort_keys`,
/// `sort_scan`, `sort_place` (the warp-coherent order of large batches); in
/// a robot-specialised
/// unit with an f16-slot pass also [`HALF_KERNEL_NAMES`]; then `kernels/rrtc.cu`
/// ([`RRTC_KERNEL_NAMES`]: RRT-Connect resident on the device, whose motion checks are the
/// motion kernels' per-configuration tests, so it shares their translation unit).
pub const COLLISION_CU: &str = concat!(
    include_str!("../../kernels/collision.cu"),
    "\n// ---- rrtc.cu ----\n",
    include_str!("../../kernels/rrtc.cu")
);

/// The device-resident RRT-Connect kernels of the collision module (`kernels/rrtc.cu`,
/// `src/gpu/rrtc.rs`): every problem in the checker's scene or each in
/// its own scene of a shared-launch executor.
pub const RRTC_KERNEL_NAMES: [&str; 2] = ["rrtc_plan", "rrtc_plan_multi"];

/// `kernels/drm.cu`: `rgg_label` (RGG verdicts of a dynamic roadmap against one obstacle) and
/// `drm_voxel_mark`, `drm_voxel_count`, `drm_voxel_list` (the DRM voxel map).
pub const DRM_CU: &str = include_str!("../../kernels/drm.cu");

/// Every kernel source file, by file name (for tests that compile each one).
pub const SOURCES: [(&str, &str); 3] = [
    ("common.cuh", COMMON_CUH),
    ("collision.cu", COLLISION_CU),
    ("drm.cu", DRM_CU),
];

/// Names of the kernels in the dynamic-roadmap module.
pub const DRM_KERNEL_NAMES: [&str; 4] = [
    "rgg_label",
    "drm_voxel_mark",
    "drm_voxel_count",
    "drm_voxel_list",
];

/// Names of the kernels in the collision module.
pub const KERNEL_NAMES: [&str; 12] = [
    "check_configs",
    "check_configs_multi",
    "check_configs_warp",
    "check_motions_naive",
    "check_motions_balanced",
    "check_motions_balanced_multi",
    "check_motions_balanced_warp",
    "check_motions_tiled",
    "fk_frames",
    "sort_keys",
    "sort_scan",
    "sort_place",
];

/// The kernels of a robot-specialised collision module with an f16-slot pass
/// (`Layout::LoopedHalf` of `src/gpu/specialise.rs`): `check_configs_half` decides the
/// configurations that pass can and queues the rest; `check_configs_rest` checks those exactly.
pub const HALF_KERNEL_NAMES: [&str; 2] = ["check_configs_half", "check_configs_rest"];

/// `common.cuh` followed by the `.cu` file `name` with source `src` (the `#include` is
/// resolved here, so NVRTC needs no include path).
fn unit(name: &str, src: &str) -> String {
    let mut s = String::with_capacity(COMMON_CUH.len() + src.len() + 64);
    s.push_str("// ---- common.cuh ----\n");
    s.push_str(COMMON_CUH);
    s.push_str(&format!("\n// ---- {name} ----\n"));
    s.push_str(src);
    s
}

/// The collision translation unit: `common.cuh` followed by `collision.cu`.
pub fn collision_source() -> String {
    unit("collision.cu", COLLISION_CU)
}

/// The dynamic-roadmap translation unit: `common.cuh` followed by `drm.cu`.
pub fn drm_source() -> String {
    unit("drm.cu", DRM_CU)
}

/// The translation unit of source file `name` (one of [`SOURCES`]; a header compiles alone).
pub fn source_unit(name: &str) -> Option<String> {
    match name {
        "common.cuh" => Some(COMMON_CUH.to_string()),
        "collision.cu" => Some(collision_source()),
        "drm.cu" => Some(drm_source()),
        _ => None,
    }
}

/// NVRTC options that keep the kernels bit-identical to the CPU: no fused multiply-add, IEEE
/// division and square root, no flush-to-zero, no fast math.
pub fn exact_options(arch: &'static str) -> CompileOptions {
    CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(false),
        use_fast_math: None,
        arch: Some(arch),
        name: Some("gmp_collision.cu".into()),
        ..Default::default()
    }
}

/// The `compute_XY` architecture string for a compute capability (NVRTC wants a `'static`
/// string); unknown capabilities map to the nearest lower known one.
pub fn arch_for(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (m, _) if m >= 12 => "compute_120",
        (10, _) | (11, _) => "compute_100",
        (9, _) => "compute_90",
        (8, n) if n >= 9 => "compute_89",
        (8, n) if n >= 6 => "compute_86",
        (8, _) => "compute_80",
        _ => "compute_75",
    }
}

/// True when libnvrtc can be loaded (cudarc panics instead of returning an error when it
/// cannot, so every compilation checks this first).
pub fn nvrtc_available() -> bool {
    std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// Formats an NVRTC error with its log.
pub fn describe_compile_error(e: &CompileError) -> String {
    match e {
        CompileError::CompileError {
            nvrtc,
            options,
            log,
        } => format!(
            "NVRTC failed to compile the kernels ({nvrtc:?}, options {options:?}):\n{}",
            log.to_string_lossy()
        ),
        other => format!("NVRTC error: {other:?}"),
    }
}

/// Compiles `src` to PTX for `arch` with [`exact_options`]. Errors carry NVRTC's log.
pub fn compile(src: &str, arch: &'static str) -> Result<Ptx, String> {
    compile_with(src, arch, None)
}

/// [`compile`] with an optional register cap per thread (NVRTC `--maxrregcount`).
pub fn compile_with(src: &str, arch: &'static str, maxrreg: Option<usize>) -> Result<Ptx, String> {
    if !nvrtc_available() {
        return Err(
            "libnvrtc was not found on the library path (install the CUDA runtime compiler, \
             e.g. `source scripts/nvrtc_env.sh`)"
                .into(),
        );
    }
    let src = src.to_string();
    let opts = CompileOptions {
        maxrregcount: maxrreg,
        ..exact_options(arch)
    };
    let r = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts));
    match r {
        Ok(Ok(ptx)) => {
            if ptx.to_src().trim().is_empty() {
                Err("NVRTC returned an empty PTX image".into())
            } else {
                Ok(ptx)
            }
        }
        Ok(Err(e)) => Err(describe_compile_error(&e)),
        Err(_) => Err("NVRTC panicked while compiling the kernels".into()),
    }
}

/// Environment variable naming the folder of the compiled-kernel cache (`off` or `0`: no
/// cache). Default: `$XDG_CACHE_HOME/gpu_motion_planner/kernels`, else
/// `$HOME/.cache/gpu_motion_planner/kernels`.
pub const KERNEL_CACHE_ENV: &str = "GMP_KERNEL_CACHE";

/// The folder of the compiled-kernel cache ([`KERNEL_CACHE_ENV`]), `None` when it is off or
/// no home folder is known.
pub fn kernel_cache_dir() -> Option<std::path::PathBuf> {
    match std::env::var(KERNEL_CACHE_ENV) {
        Ok(v) if v == "off" || v == "0" => None,
        Ok(v) if !v.is_empty() => Some(v.into()),
        _ => {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|v| !v.is_empty())
                        .map(|h| std::path::PathBuf::from(h).join(".cache"))
                })?;
            Some(base.join("gpu_motion_planner").join("kernels"))
        }
    }
}

/// NVRTC's version, `(0, 0)` when it cannot be asked.
fn nvrtc_version() -> (i32, i32) {
    if !nvrtc_available() {
        return (0, 0);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above); the call only writes the two ints.
    let r = std::panic::catch_unwind(move || {
        let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
        (status, major, minor)
    });
    match r {
        Ok((cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS, major, minor)) => (major, minor),
        _ => (0, 0),
    }
}

/// Everything the PTX of a compilation depends on: the cache's format, NVRTC's version, the
/// options and the source text. A cache entry is used only when its stored key equals this
/// one byte for byte, so a hash collision cannot hand out the wrong kernels.
pub fn cache_key(src: &str, arch: &'static str, maxrreg: Option<usize>) -> String {
    let opts = CompileOptions {
        maxrregcount: maxrreg,
        ..exact_options(arch)
    };
    let (major, minor) = nvrtc_version();
    format!("gmp kernel cache 1\nnvrtc {major}.{minor}\noptions {opts:?}\n{src}")
}

/// The cache file of `key` in `dir`: named by a 64-bit FNV-1a hash of the key; it holds the
/// key's length in bytes on the first line, the key, then the PTX.
pub fn cache_file(dir: &std::path::Path, key: &str) -> std::path::PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    dir.join(format!("{h:016x}.ptx"))
}

/// The PTX stored for `key` in `dir`, if an entry with exactly that key is there.
pub fn cached_ptx(dir: &std::path::Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(cache_file(dir, key)).ok()?;
    let (len, rest) = text.split_once('\n')?;
    let len: usize = len.trim().parse().ok()?;
    let (stored, ptx) = (rest.get(..len)?, rest.get(len..)?);
    (stored == key && !ptx.trim().is_empty()).then(|| ptx.to_string())
}

/// Stores `ptx` for `key` in `dir` (written whole or not at all; errors are returned, the
/// caller may ignore them: the cache only saves time).
pub fn store_ptx(dir: &std::path::Path, key: &str, ptx: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = format!("{}\n{key}{ptx}", key.len());
    crate::report::write_atomically(&cache_file(dir, key), text.as_bytes())
}

/// [`compile_with`] through the on-disk cache of [`kernel_cache_dir`]: NVRTC runs only for a
/// source, option set and NVRTC version not compiled before on this machine (the largest
/// robot-specialised modules take NVRTC a minute or more). Returns the PTX and whether it came
/// from the cache.
pub fn compile_cached(
    src: &str,
    arch: &'static str,
    maxrreg: Option<usize>,
) -> Result<(Ptx, bool), String> {
    let Some(dir) = kernel_cache_dir() else {
        return compile_with(src, arch, maxrreg).map(|p| (p, false));
    };
    let key = cache_key(src, arch, maxrreg);
    if let Some(ptx) = cached_ptx(&dir, &key) {
        return Ok((Ptx::from_src(ptx), true));
    }
    let ptx = compile_with(src, arch, maxrreg)?;
    if let Err(e) = store_ptx(&dir, &key, &ptx.to_src()) {
        eprintln!(
            "gmp: could not write the kernel cache in {} ({e}); kernels will be compiled again \
             next time",
            dir.display()
        );
    }
    Ok((ptx, false))
}

/// Compiles the collision module for `arch`.
pub fn compile_collision(arch: &'static str) -> Result<Ptx, String> {
    compile(&collision_source(), arch)
}

/// Compiles the dynamic-roadmap module for `arch`.
pub fn compile_drm(arch: &'static str) -> Result<Ptx, String> {
    compile(&drm_source(), arch)
}

/// Host "twins" of the kernels: the CUDA C compiled by the host C++ compiler, with the
/// options that keep its f32 arithmetic the device's (no contraction into fused multiply-adds,
/// no fast math), so tests without a GPU can run kernel code thread by thread against the CPU.
pub mod host_twin {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Stands in for the CUDA keywords so that `common.cuh` (and code generated to go with it)
    /// compiles as C++; put it first.
    pub const PRELUDE: &str = r#"
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
using std::isnan;
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__
#define __constant__
"#;

    /// The host C++ compiler (`$GMP_CXX`, default `c++`), when it runs.
    pub fn compiler() -> Option<String> {
        let c = std::env::var("GMP_CXX").unwrap_or_else(|_| "c++".into());
        Command::new(&c)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| c)
    }

    /// Writes `text` to `<dir>/<name>.cpp` and compiles it with `cxx` to `<dir>/<name>`;
    /// returns the executable, or the compiler's first 40 lines of errors.
    pub fn compile(cxx: &str, dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
        let file = dir.join(format!("{name}.cpp"));
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
        let exe = dir.join(name);
        let out = Command::new(cxx)
            .args([
                "-std=c++17",
                "-O1",
                "-ffp-contract=off",
                "-fno-fast-math",
                "-Wno-unknown-pragmas",
                "-Wno-pragma-once-outside-header",
                "-o",
            ])
            .arg(&exe)
            .arg(&file)
            .output()
            .map_err(|e| format!("{cxx}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{cxx} failed on {}:\n{}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .take(40)
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
        Ok(exe)
    }
}
