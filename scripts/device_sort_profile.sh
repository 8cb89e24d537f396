#!/usr/bin/env bash
# On the GPU machine (after scripts/device_prepare.sh here; device tool with carry [".device"]):
# per-kernel durations of the warp-coherent order (sort_keys, sort_scan, sort_place) and of the
# configuration kernels behind it, from Nsight Compute (gpu__time_duration, clocks not locked),
# for the Panda sphere model on one scene (GMP_PROFILE_SCENE, default bookshelf_thin), 1e7
# configurations, in three runs:
#   sorted    the device sorts each pipelined piece (the default)
#   presorted the batch sorted on the host by the device's key in chunks of one piece, device
#             sort off: the configuration kernels without the scattered row reads
#   off       the caller's order, device sort off
# Writes $OUT/ncu_<run>.csv and prints the mean duration per kernel name and run.
set -u
cd "$(dirname "$0")/.."
. scripts/device_env.sh
ncu_bin="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
scene="${GMP_PROFILE_SCENE:-bookshelf_thin}"
piece="${GMP_PROFILE_PIECE:-1013760}"
for run in sorted presorted off; do
  presort=none
  case $run in
    sorted) unset GMP_SORT_MIN ;;
    presorted) export GMP_SORT_MIN=off; presort="device:$piece" ;;
    off) export GMP_SORT_MIN=off ;;
  esac
  timeout 240 "$ncu_bin" --clock-control none --csv --metrics gpu__time_duration.sum \
    -k 'regex:sort_|check_configs' --launch-count "${GMP_PROFILE_LAUNCHES:-60}" \
    "$D/gmp" bench collision --robots panda --scenes "$scene" --shapes spheres --backends cuda \
    --variants specialised --config-sizes 10000000 --motion-sizes 1000 --presort "$presort" \
    --out "$OUT/bench_$run" > "$OUT/ncu_$run.csv" 2> "$OUT/ncu_$run.err"
  echo "run $run rc $?"
  python3 - "$OUT/ncu_$run.csv" "$run" <<'PY'
import csv, sys, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
t = collections.defaultdict(list)
for r in csv.DictReader(rows):
    if r.get("Metric Name") == "gpu__time_duration.sum":
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        t[r["Kernel Name"].split("(")[0]].append(v * {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3))
for k, v in sorted(t.items()):
    print("%s %-22s launches %3d  mean %9.1f us  median %9.1f us" % (sys.argv[2], k, len(v), sum(v) / len(v), sorted(v)[len(v) // 2]))
PY
done
unset GMP_SORT_MIN
