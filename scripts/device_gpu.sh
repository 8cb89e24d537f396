#!/usr/bin/env bash
# Run ON the GPU machine from the repository root (no Rust there). Expects .device/ staged by
# scripts/device_prepare.sh. Called by the lead with the device tool:
#   run  carry: [".device"]  command: bash scripts/device_gpu.sh [mode]
# Modes: all (default: parity, memcheck, bench), parity (every parity test, one process per
# robot, the specialised kernels in their default layouts unless GMP_PARITY_LAYOUTS=all or a
# list; then the sphere models again with every piece in warp-coherent order and through the
# f16 pass), memcheck, bench, quick (a small smoke
# run of all three), drm (the dynamic roadmap on the GPU: the `gpu_parity drm` tests — CUDA label
# engine against the CPU engines, batched forward kinematics and the CUDA-built voxel map against
# the CPU's — a memcheck of them, and `gmp bench dynamic --experiment scale` with 10k and 100k
# edges, which times the voxel map on the CPU and the GPU side by side), drm-quick (the same,
# small), fold (the constant-folding builds of the specialised kernels, inline-fold and
# grouped-fold, against inline and grouped: Panda parity of the folded builds, then the Panda
# collision benchmark with all four builds side by side; GMP_FOLD_CONFIGS / GMP_FOLD_MOTIONS size
# the parity run, default 200000 / 20000), planner (the device RRT-Connect: tests/gpu_planner.rs,
# then `gmp bench mbm --on-device --batched 1` for the sphere models of GMP_PLANNER_ROBOTS), gated (the looped-gated layout of the specialised kernels
# against looped, sphere models: an Nsight Compute profile of one configuration launch of each
# (Panda, bookshelf_small, 1e6; ncu_<build>.txt), the Panda collision benchmark with both builds
# side by side (bookshelf_small and cage, 1e6 and 1e7 configurations), then parity of
# looped-gated with the CPU for the Panda, UR5 and Fetch sphere models, GMP_GATED_CONFIGS /
# GMP_GATED_MOTIONS configurations / motions, default 400000 / 40000, of which the sphere model
# runs a quarter; GMP_GATED_ROBOTS picks the robots, GMP_GATED_FOLD=1 adds a Panda parity run of
# the folded builds), layouts (builds of the specialised kernels side by side and parity of one:
# see the mode's block below), motions (the motion kernels side by side: parity and the Panda
# benchmark, see the mode's block). GMP_DRM_BENCH_ARGS adds arguments to that bench (e.g. "--voxel-cpu-edges 2000"). Results go to $OUT (logs, results/collision/*.json|md,
# results/dynamic/*.json|md). The last line is a one-line summary. Parity and the collision
# benchmark cover both CUDA kernel variants (generic and robot-specialised);
# GMP_CUDA_KERNEL=generic restricts both to the generic kernels.
set -uo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
D=.device
OUT="${OUT:-/tmp/gmp-device-out}"
mkdir -p "$OUT"
nvidia-smi -L 2>&1 | tee "$OUT/devices.txt"
# shellcheck source=scripts/device_env.sh
. scripts/device_env.sh

# The benchmark measures the generic and the robot-specialised kernels side by side, for the
# polytope and the sphere model, the specialised ones in their default build (the layout the
# model suits, the compiler's register count) and in the other layouts. GMP_BENCH_ARGS adds
# arguments, e.g. GMP_BENCH_ARGS="--spec-builds inline,grouped,inline:96,grouped:96" for register
# caps too (longer), or "--robots panda" to leave out the planar arm.
parity_n=1000000; motions_n=100000
bench_args=(--shapes polytopes,spheres --spec-builds inline,grouped,looped)
if [ "$mode" = quick ]; then
  parity_n=20000; motions_n=2000; bench_args+=(--quick)
fi
# shellcheck disable=SC2206
bench_args+=(${GMP_BENCH_ARGS:-})

status_parity="skipped"; status_memcheck="skipped"; status_bench="skipped"; status_drm="skipped"
if [ "$mode" = fold ]; then
  GMP_PARITY_LAYOUTS=inline-fold,grouped-fold GMP_PARITY_CONFIGS=${GMP_FOLD_CONFIGS:-200000} \
    GMP_PARITY_MOTIONS=${GMP_FOLD_MOTIONS:-20000} GMP_PARITY_MOTION_KERNEL=balanced \
    "$D/gpu_parity" gpu_parity_panda --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_parity="ok"; else status_parity="FAILED"; fi
  # shellcheck disable=SC2086
  "$D/gmp" bench collision --out "$OUT/results/collision" --robots panda \
    --shapes ${GMP_FOLD_SHAPES:-spheres,polytopes} \
    --spec-builds inline,grouped,inline-fold,grouped-fold ${GMP_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_bench="ok"; else status_bench="FAILED"; fi
  cat "$OUT"/results/collision/*.md 2>/dev/null
fi
if [ "$mode" = gated ]; then
  ncu_bin="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
  for b in looped looped-gated; do
    GMP_SPEC_LAYOUT="$b" timeout 120 "$ncu_bin" --clock-control none -k regex:check_configs --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section InstructionStats "$D/gmp" bench collision --robots panda --scenes bookshelf_small \
      --config-sizes 1000000 --motion-sizes 1000 --backends cuda --variants specialised \
      --shapes spheres >"$OUT/ncu_$b.txt" 2>&1
    echo "device_gpu: ncu $b rc=$?"
  done
  # shellcheck disable=SC2086
  "$D/gmp" bench collision --out "$OUT/results/collision" --robots panda \
    --scenes bookshelf_small,cage --config-sizes 1000000,10000000 --motion-sizes 1000 \
    --backends cuda --variants specialised --shapes spheres --spec-builds looped,looped-gated \
    ${GMP_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_bench="ok"; else status_bench="FAILED"; fi
  status_parity="ok"
  for r in ${GMP_GATED_ROBOTS:-panda ur5 fetch}; do
    # The naive motion kernel runs about 300x slower than the balanced one on sphere models
    # (3.5e3 motions/s): it alone made a 42,000 / 4,200 run take over 3 minutes per robot, so
    # this parity run uses the balanced (default) kernel unless GMP_PARITY_MOTION_KERNEL says.
    GMP_PARITY_MOTION_KERNEL=${GMP_PARITY_MOTION_KERNEL:-balanced} \
      GMP_PARITY_SHAPES=spheres GMP_PARITY_LAYOUTS=looped-gated \
      GMP_PARITY_CONFIGS=${GMP_GATED_CONFIGS:-400000} GMP_PARITY_MOTIONS=${GMP_GATED_MOTIONS:-40000} \
      "$D/gpu_parity" "gpu_parity_$r" --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status_parity="FAILED"
  done
  if [ "${GMP_GATED_FOLD:-0}" = 1 ]; then
    GMP_PARITY_SHAPES=spheres GMP_PARITY_LAYOUTS=inline-fold,grouped-fold GMP_PARITY_CONFIGS=200000 \
      GMP_PARITY_MOTIONS=8000 GMP_PARITY_MOTION_KERNEL=balanced \
      "$D/gpu_parity" gpu_parity_panda --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status_parity="FAILED"
  fi
  cat "$OUT"/results/collision/*.md 2>/dev/null
  grep -hE "Duration|Registers Per|Achieved Occ|Issue Slots Busy|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit" \
    "$OUT"/ncu_*.txt 2>/dev/null
fi
if [ "$mode" = layouts ]; then
  # Layouts of the specialised kernels side by side on the sphere models (Panda benchmark,
  # bookshelf_small and cage, 1e6 and 1e7 configurations; GMP_LAYOUTS_BUILDS, default
  # looped,streamed), an optional Nsight Compute profile of each build in GMP_LAYOUTS_NCU, an
  # optional second benchmark with the variable assignment in GMP_LAYOUTS_ENV2 exported (e.g.
  # GMP_WHOLE_WAVES=0; into results/collision_env2), then
  # parity of GMP_LAYOUTS_PARITY (default streamed) with the CPU: Panda, UR5 and Fetch sphere
  # models at GMP_PARITY_CONFIGS / GMP_PARITY_MOTIONS (default 1000000 / 100000, balanced motion
  # kernel) and the Panda polytope model at a fifth of that.
  builds="${GMP_LAYOUTS_BUILDS:-looped,streamed}"
  ncu_bin="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
  for b in ${GMP_LAYOUTS_NCU:-}; do
    timeout 120 "$ncu_bin" --clock-control none -k regex:check_configs --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis "$D/gmp" bench collision --robots panda --scenes bookshelf_small \
      --config-sizes 1000000 --motion-sizes 1000 --backends cuda --variants specialised \
      --shapes spheres --spec-builds "$b" >"$OUT/ncu_$b.txt" 2>&1
    echo "device_gpu: ncu $b rc=$?"
  done
  bench_once() {
    # shellcheck disable=SC2086
    "$D/gmp" bench collision --out "$1" --robots panda \
      --scenes bookshelf_small,cage --config-sizes 1000000,10000000 --motion-sizes 1000 \
      --backends cuda --variants specialised --shapes spheres --spec-builds "$builds" \
      ${GMP_BENCH_ARGS:-} 2>&1 | tee -a "$OUT/bench.log"
  }
  bench_once "$OUT/results/collision"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_bench="ok"; else status_bench="FAILED"; fi
  if [ -n "${GMP_LAYOUTS_ENV2:-}" ]; then
    # shellcheck disable=SC2163
    (export "$GMP_LAYOUTS_ENV2"; bench_once "$OUT/results/collision_env2")
  fi
  status_parity="ok"
  pc=${GMP_PARITY_CONFIGS:-1000000}; pm=${GMP_PARITY_MOTIONS:-100000}
  for r in ${GMP_LAYOUTS_ROBOTS:-panda ur5 fetch}; do
    GMP_PARITY_MOTION_KERNEL=${GMP_PARITY_MOTION_KERNEL:-balanced} \
      GMP_PARITY_SHAPES=spheres GMP_PARITY_LAYOUTS=${GMP_LAYOUTS_PARITY:-streamed} \
      GMP_PARITY_CONFIGS=$pc GMP_PARITY_MOTIONS=$pm \
      "$D/gpu_parity" "gpu_parity_$r" --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status_parity="FAILED"
  done
  GMP_PARITY_MOTION_KERNEL=${GMP_PARITY_MOTION_KERNEL:-balanced} \
    GMP_PARITY_SHAPES=polytopes GMP_PARITY_LAYOUTS=${GMP_LAYOUTS_PARITY:-streamed} \
    GMP_PARITY_CONFIGS=$((pc / 5)) GMP_PARITY_MOTIONS=$((pm / 5)) \
    "$D/gpu_parity" gpu_parity_panda --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status_parity="FAILED"
  cat "$OUT"/results/collision*/*.md 2>/dev/null
  grep -hE "Duration|Registers Per|Achieved Occ|Issue Slots Busy|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|DRAM Throughput" \
    "$OUT"/ncu_*.txt 2>/dev/null
fi
if [[ "$mode" = all || "$mode" = parity || "$mode" = quick ]]; then
  # The specialised kernels' other layouts (nine more builds per robot and model) only when
  # asked: GMP_PARITY_LAYOUTS=all, or a list of layout names. With all of them the three robots
  # no longer fit one 600-second device call (2026-11-25). Each robot runs in its own process
  # under its own timeout (GMP_PARITY_TIMEOUT seconds, default 200, 560 with a filter), then the
  # other tests. At the issue's sizes (1e6 configurations, 1e5 motions) one robot takes more
  # than 200 s on the H100 (2026-11-26: the CPU reference of the polytope motions), so the
  # three robots do not fit one device call either: run one per call with
  # GMP_PARITY_FILTER=gpu_parity_panda (ur5, fetch), then GMP_PARITY_FILTER=drm etc. Panda alone
  # did not fit one call either (2026-11-26: polytopes done, then the sphere model, 250k
  # configurations and 25k motions, still running after another 360 s), so also split the
  # models: GMP_PARITY_SHAPES=polytopes, then GMP_PARITY_SHAPES=spheres. The time of the sphere
  # model goes to the generic kernels' naive motion kernel (one thread per motion, the 59-sphere
  # Panda's 690 self pairs from tables: 0.8-14 s per 200 motions on the H100, against 6-14 ms
  # for the balanced kernel, GMP_PARITY_TIMINGS=1); GMP_PARITY_MOTION_KERNEL=balanced leaves it
  # out (neither the planners nor the benchmarks use it by default).
  # GMP_PARITY_FILTER: run only the parity tests whose name contains it (e.g. gpu_parity_ur5).
  # The specialised kernels of the sphere models read the scene's proximity grid from batches of
  # GMP_PROX_MIN configurations (default 262144); parity builds and reads it at every size
  # (GMP_PROX_MIN=off runs without it).
  export GMP_PROX_MIN="${GMP_PROX_MIN:-1}"
  case "${GMP_PARITY_LAYOUTS-}" in
    all) unset GMP_PARITY_LAYOUTS ;;
    *) export GMP_PARITY_LAYOUTS="${GMP_PARITY_LAYOUTS-}" ;;
  esac
  status_parity="ok"
  robots=(gpu_parity_panda gpu_parity_ur5 gpu_parity_fetch)
  if [ -n "${GMP_PARITY_FILTER:-}" ]; then
    runs=("$GMP_PARITY_FILTER")
    export GMP_PARITY_TIMEOUT="${GMP_PARITY_TIMEOUT:-560}"
  else
    runs=("${robots[@]}" rest)
  fi
  for t in "${runs[@]}"; do
    args=("$t")
    [ "$t" = rest ] && args=(--skip gpu_parity_panda --skip gpu_parity_ur5 --skip gpu_parity_fetch)
    GMP_PARITY_CONFIGS=$parity_n GMP_PARITY_MOTIONS=$motions_n timeout "${GMP_PARITY_TIMEOUT:-200}" \
      "$D/gpu_parity" "${args[@]}" --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
    rc="${PIPESTATUS[0]}"
    [ "$rc" = 0 ] || { status_parity="FAILED"; echo "device_gpu: parity $t rc $rc" | tee -a "$OUT/parity.log"; }
  done
  # The f16 pass runs on pipelined pieces of at least one device wave, batches of one piece from
  # four waves, and smaller batches never: the sphere models again with every piece (and every
  # batch) sorted (GMP_SORT_MIN=1) and through the f16 pass (GMP_HALF_MIN=1), at a fifth of the
  # size, few motions.
  if [ -z "${GMP_PARITY_FILTER:-}" ]; then
    for r in panda ur5 fetch; do
      GMP_SORT_MIN=1 GMP_HALF_MIN=1 GMP_PARITY_SHAPES=spheres GMP_PARITY_SPHERE_DIVISOR=1 GMP_PARITY_LAYOUTS=looped-half \
        GMP_PARITY_CONFIGS=$((parity_n / 5)) GMP_PARITY_MOTIONS=$((motions_n / 500)) \
        timeout "${GMP_PARITY_TIMEOUT:-200}" "$D/gpu_parity" "gpu_parity_$r" --nocapture --test-threads=1 2>&1 | tee -a "$OUT/parity.log"
      rc="${PIPESTATUS[0]}"
      [ "$rc" = 0 ] || { status_parity="FAILED"; echo "device_gpu: sorted parity $r rc $rc" | tee -a "$OUT/parity.log"; }
    done
  fi
fi
if [[ "$mode" = all || "$mode" = memcheck || "$mode" = quick ]]; then
  GMP_PARITY_CONFIGS=${GMP_MEMCHECK_CONFIGS:-2000} GMP_PARITY_MOTIONS=${GMP_MEMCHECK_MOTIONS:-200} \
    compute-sanitizer --tool memcheck \
    --error-exitcode 9 "$D/gpu_parity" gpu_parity_panda --nocapture --test-threads=1 \
    2>&1 | tee "$OUT/memcheck.log"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_memcheck="ok"; else status_memcheck="FAILED"; fi
fi
if [[ "$mode" = all || "$mode" = bench || "$mode" = quick ]]; then
  "$D/gmp" bench collision --out "$OUT/results/collision" "${bench_args[@]}" 2>&1 | tee "$OUT/bench.log"
  if [ "${PIPESTATUS[0]}" = 0 ]; then status_bench="ok"; else status_bench="FAILED"; fi
  cat "$OUT"/results/collision/*.md 2>/dev/null
fi
if [[ "$mode" = drm || "$mode" = drm-quick ]]; then
  # Sizes and counts from the environment: GMP_DRM_SIZES (edges, comma separated),
  # GMP_DRM_MOVES, GMP_PARITY_DRM_OBSTACLES, GMP_PARITY_DRM_VERTICES.
  sizes="${GMP_DRM_SIZES:-10000,100000}"; moves="${GMP_DRM_MOVES:-20}"; obstacles=3000; verts=800
  if [ "$mode" = drm-quick ]; then
    sizes="${GMP_DRM_SIZES:-2000}"; moves="${GMP_DRM_MOVES:-5}"; obstacles=300; verts=300
  fi
  drm_ok=1
  GMP_PARITY_DRM_OBSTACLES=${GMP_PARITY_DRM_OBSTACLES:-$obstacles} \
    GMP_PARITY_DRM_VERTICES=${GMP_PARITY_DRM_VERTICES:-$verts} \
    "$D/gpu_parity" drm --nocapture --test-threads=1 2>&1 | tee "$OUT/drm_parity.log"
  [ "${PIPESTATUS[0]}" = 0 ] || drm_ok=0
  GMP_PARITY_DRM_OBSTACLES=100 GMP_PARITY_DRM_VERTICES=150 GMP_PARITY_FK_CONFIGS=20000 \
    compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$D/gpu_parity" drm --nocapture --test-threads=1 2>&1 | tee "$OUT/drm_memcheck.log"
  [ "${PIPESTATUS[0]}" = 0 ] || drm_ok=0
  # shellcheck disable=SC2086
  "$D/gmp" bench dynamic --experiment scale --sizes "$sizes" --repetitions "$moves" \
    ${GMP_DRM_BENCH_ARGS:-} --out "$OUT/results/dynamic" 2>&1 > "$OUT/drm_bench.json" | tee "$OUT/drm_bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || drm_ok=0
  cat "$OUT"/results/dynamic/*.md 2>/dev/null
  if [ "$drm_ok" = 1 ]; then status_drm="ok"; else status_drm="FAILED"; fi
fi
if [ "$mode" = motions ]; then
  # The motion kernels side by side: the Panda sphere-model benchmark of the balanced and tiled
  # kernels on all seven scenes (1e6 configurations and GMP_MOTIONS_SIZES motions, default
  # 1000,100000,1000000; the CPU runs up to 1e5), then parity of the sphere models of
  # GMP_MOTIONS_ROBOTS (default panda ur5 fetch) at the issue's sizes (GMP_PARITY_CONFIGS /
  # GMP_PARITY_MOTIONS, default 1000000 / 100000) with the kernels in GMP_PARITY_MOTION_KERNEL
  # (default balanced,tiled), generic and specialised (default layout unless
  # GMP_PARITY_LAYOUTS says), the proximity grid read at every size. GMP_MOTIONS_KERNELS: the
  # benchmark's motion kernels (default balanced,tiled). GMP_MOTIONS_ONE_PIECE=1: first the same
  # benchmark with every motion batch checked in one piece (GMP_MOTION_PIECES=1, results under
  # $OUT/results/collision_one_piece), for the pipelined pieces side by side.
  motion_bench() {
    "$D/gmp" bench collision --out "$1" --robots panda --shapes spheres \
      --scenes bookshelf_small,bookshelf_tall,bookshelf_thin,box,cage,table_pick,table_under_pick \
      --backends cpu,cuda --variants specialised --config-sizes 1000000 \
      --motion-sizes "${GMP_MOTIONS_SIZES:-1000,100000,1000000}" \
      --motion-kernels "${GMP_MOTIONS_KERNELS:-balanced,tiled}" --cpu-max-motions 100000
  }
  status_bench="ok"
  if [ "${GMP_MOTIONS_ONE_PIECE:-0}" = 1 ]; then
    GMP_MOTION_PIECES=1 motion_bench "$OUT/results/collision_one_piece" 2>&1 | tee "$OUT/bench_one_piece.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status_bench="FAILED"
  fi
  motion_bench "$OUT/results/collision" 2>&1 | tee "$OUT/bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status_bench="FAILED"
  cat "$OUT"/results/collision/*.md 2>/dev/null
  status_parity="ok"
  for r in ${GMP_MOTIONS_ROBOTS:-panda ur5 fetch}; do
    GMP_PROX_MIN=1 GMP_PARITY_MOTION_KERNEL=${GMP_PARITY_MOTION_KERNEL:-balanced,tiled} \
      GMP_PARITY_LAYOUTS="${GMP_PARITY_LAYOUTS-}" GMP_PARITY_SHAPES=spheres GMP_PARITY_SPHERE_DIVISOR=1 \
      GMP_PARITY_CONFIGS=${GMP_PARITY_CONFIGS:-1000000} GMP_PARITY_MOTIONS=${GMP_PARITY_MOTIONS:-100000} \
      timeout "${GMP_PARITY_TIMEOUT:-200}" "$D/gpu_parity" "gpu_parity_$r" --nocapture --test-threads=1 2>&1 \
      | tee -a "$OUT/parity.log"
    rc="${PIPESTATUS[0]}"
    [ "$rc" = 0 ] || { status_parity="FAILED"; echo "device_gpu: parity $r rc $rc" | tee -a "$OUT/parity.log"; }
  done
fi
status_planner="skipped"
if [ "$mode" = planner ]; then
  # The device RRT-Connect (tests/gpu_planner.rs), then the MBM problems with it: one problem
  # at a time (hybrid backend: start/goal checks and shortcutting on the CPU) and every valid
  # problem of a robot in one launch (--batched). GMP_PLANNER_PROBLEMS problems per scene
  # (default 100), GMP_PLANNER_ROBOTS (default panda,ur5), GMP_PLANNER_ATTEMPTS (attempts per
  # problem, a comma-separated list, default 1), GMP_RRTC_WARPS warps per attempt.
  planner_ok=1
  "$D/gpu_planner" --nocapture --test-threads=1 2>&1 | tee "$OUT/planner_tests.log" | grep -E "^test |test result"
  [ "${PIPESTATUS[0]}" = 0 ] || planner_ok=0
  for r in $(echo "${GMP_PLANNER_ROBOTS:-panda,ur5}" | tr ',' ' '); do
    for k in $(echo "${GMP_PLANNER_ATTEMPTS:-1}" | tr ',' ' '); do
      o="$OUT/results/mbm_device_${r}_a$k"
      echo "== $r, $k attempts per problem"
      "$D/gmp" bench mbm --robots "$r" --shapes spheres --backend hybrid --on-device --batched 1 \
        --attempts "$k" --problems "${GMP_PLANNER_PROBLEMS:-100}" --out "$o" > "$OUT/planner_bench_${r}_a$k.log" 2>&1 || planner_ok=0
      grep -hE "^\| $r \| \*\*all|one device launch" "$o"/*.md
    done
  done
  if [ "$planner_ok" = 1 ]; then status_planner="ok"; else status_planner="FAILED"; fi
fi
parity_lines="$(grep -h '^parity:' "$OUT/parity.log" "$OUT/drm_parity.log" 2>/dev/null | tr '\n' ';')"
echo "SUMMARY device=$(head -1 "$OUT/devices.txt" | cut -c1-60) parity=$status_parity memcheck=$status_memcheck bench=$status_bench drm=$status_drm planner=$status_planner | $parity_lines"
