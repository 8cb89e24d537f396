#!/usr/bin/env bash
# GPU checks and benchmark of the grid planner (src/grid, kernels/grid_pba.cu).
#
# The GPU machine has no Rust, so everything is built here and staged into .device/grid/:
#
#   export CARGO_TARGET_DIR=/work/target-grid      # or your target folder
#   bash scripts/device_grid.sh --stage            # builds release test binary + example, copies them
#
# Then, with the device tool (one call, well under 10 minutes):
#
#   run(command="set -o pipefail; bash .device/grid/device_grid.sh 2>&1 | tee $OUT/log.txt",
#       carry=[".device"])
#
# It runs every grid test (the GPU ones compare the CUDA backend with the CPU twin on many
# maps), the GPU tests again under compute-sanitizer memcheck when it is installed, then
# `bench grid --parts scale` (512/1024 maps, 512..262144 agents) and `--parts table1`,
# writing results/ (grid_<date>.json and .md) and logs under $OUT.
# Options through the environment: GRID_TABLE1_MAPS (default 100), GRID_SKIP_TABLE1=1,
# GRID_SKIP_SANITIZER=1, GRID_BENCH_ARGS (extra arguments for both bench parts).
set -euo pipefail

if [[ "${1:-}" == "--stage" ]]; then
    target="${CARGO_TARGET_DIR:-target}"
    cargo build --release --example grid_cli
    test_bin=$(cargo test --release --test grid --no-run --message-format=json 2>/dev/null \
        | grep '"executable":"[^"]*"' -o | tail -n 1 | sed 's/"executable":"//; s/"$//')
    if [[ -z "$test_bin" || ! -x "$test_bin" ]]; then
        echo "could not find the grid test binary" >&2
        exit 1
    fi
    mkdir -p .device/grid
    cp "$target/release/examples/grid_cli" .device/grid/grid_cli
    cp "$test_bin" .device/grid/grid_tests
    cp scripts/device_grid.sh .device/grid/device_grid.sh
    # .device/ is git-ignored (.gitignore); the device tool takes it through `carry`
    ls -l .device/grid
    exit 0
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}"
mkdir -p "$out/results"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt" || true

echo "== grid tests (all, GPU ones included)"
"$here/grid_tests" --test-threads=1 --nocapture 2>&1 | tee "$out/tests.txt"

if [[ "${GRID_SKIP_SANITIZER:-0}" != "1" ]] && command -v compute-sanitizer >/dev/null; then
    echo "== GPU tests under compute-sanitizer memcheck"
    compute-sanitizer --tool memcheck --error-exitcode 3 \
        "$here/grid_tests" --test-threads=1 grid_gpu 2>&1 | tail -n 40 | tee "$out/memcheck.txt"
fi

echo "== bench grid: scale"
# shellcheck disable=SC2086
timeout 300 "$here/grid_cli" bench --parts scale --backend cuda --out "$out/results" \
    ${GRID_BENCH_ARGS:-} > "$out/bench_scale.json"

if [[ "${GRID_SKIP_TABLE1:-0}" != "1" ]]; then
    echo "== bench grid: table1"
    # shellcheck disable=SC2086
    timeout 240 "$here/grid_cli" bench --parts table1 --backend cuda \
        --maps "${GRID_TABLE1_MAPS:-100}" --out "$out/results_table1" \
        ${GRID_BENCH_ARGS:-} > "$out/bench_table1.json" || echo "table1 did not finish (timeout?)"
fi
cat "$out"/results*/*.md 2>/dev/null || true
