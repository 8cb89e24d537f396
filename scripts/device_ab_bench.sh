#!/usr/bin/env bash
# On the GPU machine (device tool, carry [".device"]): the configuration benchmark of two builds
# side by side in one call, on one machine. Expects .device/gmp (this checkout, from
# scripts/device_prepare.sh) and .device/gmp_base (the build to compare with, e.g. from a
# `git worktree` of the previous commit, copied there by hand). For each scene, base then new,
# one process each: `gmp bench collision` on the Panda sphere model, CUDA only, specialised
# kernels, batches GMP_AB_SIZES (default 1e6, 4e6, 1e7), scenes GMP_AB_SCENES (default all
# seven). Writes $OUT/ab_<build>_<scene>.log and prints one line per scene and size:
#   scene n  kernel/s base -> new (change)  end-to-end f32-in/s base -> new  f32-in kernel/s
# (f32-in kernel/s is 0 for builds that do not record it)
set -u
cd "$(dirname "$0")/.."
. scripts/device_env.sh
[ -x "$D/gmp_base" ] || { echo "device_ab_bench: $D/gmp_base missing"; exit 2; }
scenes="${GMP_AB_SCENES:-bookshelf_small bookshelf_tall bookshelf_thin box cage table_pick table_under_pick}"
sizes="${GMP_AB_SIZES:-1000000,4000000,10000000}"
for s in $scenes; do
  for b in base new; do
    bin="$D/gmp"; [ $b = base ] && bin="$D/gmp_base"
    "$bin" bench collision --robots panda --scenes "$s" --shapes spheres --backends cuda \
      --variants specialised --config-sizes "$sizes" --motion-sizes 1000 \
      --out "$OUT/ab_${b}_$s" > "$OUT/ab_${b}_$s.log" 2>&1 || echo "device_ab_bench: $b $s rc $?"
  done
  python3 - "$OUT/ab_base_$s.log" "$OUT/ab_new_$s.log" <<'PY'
import json, sys
def rows(path):
    out = {}
    for l in open(path):
        if l.startswith("bench collision: {"):
            r = json.loads(l[len("bench collision: "):])
            if r["kind"] == "configs":
                g = r["gpu"][0]
                f = g.get("f32_in", {})
                out[(r["case"], r["n"])] = (g["kernel_per_s"], f.get("per_s", 0.0), f.get("kernel_per_s", 0.0))
    return out
base, new = rows(sys.argv[1]), rows(sys.argv[2])
for k in sorted(new):
    if k in base:
        (kb, eb, fb), (kn, en, fn) = base[k], new[k]
        print("%-24s %.0e  kernel/s %.3e -> %.3e (%+.1f %%)  f32-in end to end %.2e -> %.2e  f32-in kernel/s %.3e -> %.3e"
              % (k[0], k[1], kb, kn, 100 * (kn / kb - 1), eb, en, fb, fn))
PY
done
