#!/usr/bin/env bash
# On the GPU machine (device tool, carry [".device"]): the device planner's escalation settings
# side by side in one call, one binary. For each robot of GMP_ESC_ROBOTS (default panda ur5) and
# each setting of GMP_ESC_SETTINGS (default "off:8:0:32 a8e24b32:8:24:32",
# label:attempts:extra:after[:warps[:single_threads]]: warps per attempt 8 unless given,
# single_threads GMP_RRTC_SINGLE_THREADS, unset unless given), in GMP_ESC_REPEAT rounds
# (default 1, settings alternating within a round):
#   gmp bench mbm --robots R --shapes spheres --backend hybrid --on-device --batched 1 --attempts A
# with GMP_RRTC_EXTRA=extra GMP_RRTC_ESCALATE=after GMP_RRTC_WARPS=warps, every problem of the
# robot. Writes
# $OUT/esc_<robot>_<label>_<round>/ (the bench's JSON and markdown) and .log, and prints one line per run: the one launch for
# all valid problems, its slowest problem, the one-problem-per-launch planning median / p95 / max
# and device-time median, the winner's iterations median, and how many problems an extra attempt
# won.
set -u
cd "$(dirname "$0")/.."
. scripts/device_env.sh
robots="${GMP_ESC_ROBOTS:-panda ur5}"
settings="${GMP_ESC_SETTINGS:-off:8:0:32 a8e24b32:8:24:32}"
repeat="${GMP_ESC_REPEAT:-1}"
for r in $robots; do
  for round in $(seq 1 "$repeat"); do
    for s in $settings; do
      IFS=: read -r label attempts extra after warps single <<<"$s"
      o="$OUT/esc_${r}_${label}_$round"
      GMP_RRTC_SINGLE_THREADS="${single:-}" GMP_RRTC_WARPS="${warps:-8}" GMP_RRTC_EXTRA="$extra" GMP_RRTC_ESCALATE="$after" timeout "${GMP_ESC_TIMEOUT:-300}" "$D/gmp" bench mbm --robots "$r" \
        --shapes spheres --backend hybrid --on-device --batched 1 --attempts "$attempts" --problems 100 \
        --out "$o" > "$o.log" 2>&1 || echo "device_escalation: $r $label rc $?"
      python3 - "$o" "$r" "$label" <<'PY'
import glob, json, sys
out, robot, label = sys.argv[1:]
try:
    d = json.load(open(glob.glob(out + "/*.json")[0]))
except Exception as e:
    print(f"{robot} {label}: no results ({e})"); sys.exit(0)
r = d["robots"][robot]; b = r["batched"]; t = r["all"]["planning_time_s"]
dev = r["all"]["device_time_s"]["median"] or 0.0; its = r["all"]["iterations"]["median"] or 0.0
won = sum(1 for p in b["per_problem"] if p["attempt"] >= b["attempts"])
print(f"{robot:6s} {label:10s} one launch {b['wall_s']:.4f} s (slowest {b['device_us_max']/1000:.1f} ms, "
      f"solved {b['solved']}/{b['problems']}, identical {b['identical_raw_paths_to_sequential']}, extra won {won}); "
      f"one per launch median {t['median']*1e3:.3f} p95 {t['p95']*1e3:.2f} max {t['max']*1e3:.1f} ms "
      f"(device {dev*1e3:.3f} ms, iterations {its:.0f}, solved {r['all']['solved']}/{r['all']['valid']})")
PY
    done
  done
done
