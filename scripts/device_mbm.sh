#!/usr/bin/env bash
# Runs `gmp bench mbm` on the GPU machine (its host CPU and GPU), one configuration after
# another so that they do not share the machine. Stage first with scripts/device_prepare.sh;
# then, with the device tool:  run  carry: [".device"]
#   command: bash scripts/device_mbm.sh "fetch:--attempts 8" "fetch:--attempts 1" ...
# Each argument is ROBOT:ARGS (ARGS are passed to `gmp bench mbm --robots ROBOT`); the
# reports go to $OUT/mbm/<n>_<robot>/ with the log next to them, numbered in argument order.
# GMP_MBM_TIMEOUT (seconds, default 300) bounds each configuration. GMP_BIN runs another
# staged binary (e.g. .device/gmp_old, to compare two builds in one call) and GMP_MBM_TAG
# prefixes the report folders (<tag><n>_<robot>). The last line is a one-line summary: per
# configuration, its exit code and wall time.
set -uo pipefail
cd "$(dirname "$0")/.."
D=.device
OUT="${OUT:-/tmp/gmp-device-out}"
mkdir -p "$OUT/mbm"
{ nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; date -u; } 2>&1 | tee "$OUT/mbm/machine.txt"
# shellcheck source=scripts/device_env.sh
. scripts/device_env.sh
summary=""
n=0
for cfg in "$@"; do
  n=$((n + 1))
  robot="${cfg%%:*}"
  args="${cfg#*:}"
  dir="$OUT/mbm/${GMP_MBM_TAG:-}${n}_${robot}"
  mkdir -p "$dir"
  echo "device_mbm: [$n] $robot $args"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${GMP_MBM_TIMEOUT:-300}" "${GMP_BIN:-$D/gmp}" bench mbm --robots "$robot" $args --out "$dir" \
    > "$dir/bench.log" 2>&1
  rc=$?
  wall=$(( $(date +%s) - t0 ))
  grep -E '^\| ' "$dir"/*.md 2>/dev/null | grep -E "\*\*all\*\*|^\| robot" | head -2
  summary="$summary [$n] $robot '$args' rc=$rc wall=${wall}s;"
done
echo "SUMMARY device_mbm ${GMP_MBM_TAG:-}:$summary"
