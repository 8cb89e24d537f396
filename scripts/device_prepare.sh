#!/usr/bin/env bash
# Run HERE (the build machine, no GPU). Builds the release binaries and stages in .device/
# (git-ignored) everything scripts/device_gpu.sh needs on the GPU machine, which has no Rust:
#   .device/gmp              the CLI (gmp bench collision)
#   .device/gpu_parity       the parity test binary (tests/gpu_parity.rs)
#   .device/gpu_planner      the device planner's test binary (tests/gpu_planner.rs)
#   .device/data/mbm/        the MotionBenchMaker panda, ur5, fetch data (URDF, SRDF, spherized
#                            URDF, meshes, problems.tar.bz2), ~7 MB
# The kernels are embedded in the binaries (include_str!), so nothing else is needed.
#
# Run it in the checkout the device tool copies (the lead's), after merging branch gpu; the
# device runs from that checkout's root, so .device/ must sit there.
# Then, with the device tool:  run  carry: [".device"]
#                                   command: bash scripts/device_gpu.sh [all|parity|memcheck|bench|quick]
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --bin gmp
rm -rf .device && mkdir -p .device/data/mbm
cp "$TARGET/release/gmp" .device/gmp
for t in gpu_parity gpu_planner; do
  log="$(cargo test --release --no-run --test "$t" 2>&1)"
  echo "$log" | tail -2
  test_bin="$(echo "$log" | sed -n "s/.*(\(.*$t-[0-9a-f]*\)).*/\1/p" | tail -1)"
  [ -x "$test_bin" ] || { echo "device_prepare: $t test binary not found" >&2; exit 1; }
  cp "$test_bin" ".device/$t"
done
# The release profile keeps line tables (Cargo.toml); the device tool carries at most 64 MiB.
strip --strip-debug .device/gmp .device/gpu_parity .device/gpu_planner
data="${GMP_DATA:-../shared/data/mbm}"
[ -f "$data/panda/panda.urdf" ] || data="$data/mbm"
for r in panda ur5 fetch; do
  cp -a "$data/$r" .device/data/mbm/
done
cp -a "$data"/README.md "$data"/LICENSE* .device/data/mbm/ 2>/dev/null || true
du -sh .device
find .device -maxdepth 1 -type f -exec ls -la {} +
# The device tool carries at most 64 MiB: the tracked files plus .device. Warn when that is
# near (gzip the binaries, `gzip -9 .device/gmp ...`, and ship fewer at a time).
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
staged=$(du -sb .device | cut -f1)
total=$(( (tracked + staged) / 1048576 ))
echo "device_prepare: tracked files $(( tracked / 1048576 )) MiB + .device $(( staged / 1048576 )) MiB = ${total} MiB (the device tool carries at most 64)"
[ "$total" -lt 60 ] || echo "device_prepare: WARNING: over 60 MiB; gzip the binaries in .device or leave some out" >&2
