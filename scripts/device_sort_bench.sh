#!/usr/bin/env bash
# On the GPU machine (after scripts/device_prepare.sh here; device tool with carry [".device"]):
# the warp-coherent order of large configuration batches (GMP_SORT_MIN, src/gpu/mod.rs).
#   bash scripts/device_sort_bench.sh        off and on, in one call. Writes under $OUT: sort_off/
#     and sort_on/ (Panda sphere model, all seven MBM scenes; the off run also measures batches
#     presorted on the host by the device's key in chunks of one pipelined piece, i.e. what the
#     order could gain at no sorting cost), poly_off/ and poly_on/ (Panda polytopes), parity logs
#     with every configuration batch sorted and through the f16 pass (GMP_SORT_MIN=1,
#     GMP_HALF_MIN=1) and a compute-sanitizer memcheck of the same.
#   bash scripts/device_sort_bench.sh bits   the key with other bit shares (GMP_SORT_BITS; list
#     in GMP_SORT_BITS_LIST), the three slowest scenes, one process per share; $OUT/bits_<share>/
#     and a summary line each.
set -u
cd "$(dirname "$0")/.."
. scripts/device_env.sh
if [ "${1:-}" = bits ]; then
  for b in default ${GMP_SORT_BITS_LIST:-4,3,3,3,3,0,0 3,4,2,4,1,1,1 4,4,4,4,0,0,0 3,3,3,3,2,1,1 2,2,2,2,2,3,3}; do
    if [ "$b" = default ]; then unset GMP_SORT_BITS; else export GMP_SORT_BITS=$b; fi
    "$D/gmp" bench collision --robots panda --scenes bookshelf_thin,bookshelf_tall,cage --shapes spheres \
      --backends cuda --variants specialised --config-sizes 4000000,10000000 --motion-sizes 1000 \
      --out "$OUT/bits_$b" > "$OUT/bits_$b.log" 2>&1
    rc=$?
    echo "bits $b rc $rc $(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("bench collision: {"):
        r = json.loads(l[17:])
        if r["kind"] == "configs":
            print("%s %.0e %.3e" % (r["case"][6:], r["n"], r["gpu"][0]["kernel_per_s"]), end="; ")' "$OUT/bits_$b.log")"
  done
  exit 0
fi
S=bookshelf_small,bookshelf_tall,bookshelf_thin,box,cage,table_pick,table_under_pick
for run in off on; do
  presort="none"
  if [ $run = off ]; then export GMP_SORT_MIN=off; presort="none;device:1013760"; else unset GMP_SORT_MIN; fi
  "$D/gmp" bench collision --robots panda --scenes $S --shapes spheres --backends cpu,cuda \
    --variants specialised --config-sizes 1000000,4000000,10000000 --motion-sizes 1000 \
    --presort "$presort" --out "$OUT/sort_$run" > "$OUT/sort_$run.log" 2>&1
  echo "spheres sort $run rc $?"
  "$D/gmp" bench collision --robots panda --scenes bookshelf_thin,cage --shapes polytopes \
    --backends cuda --variants generic,specialised --config-sizes 1000000 --motion-sizes 1000 \
    --out "$OUT/poly_$run" > "$OUT/poly_$run.log" 2>&1
  echo "polytopes sort $run rc $?"
done
unset GMP_SORT_MIN
for r in panda ur5 fetch; do
  GMP_SORT_MIN=1 GMP_HALF_MIN=1 GMP_PARITY_SHAPES=spheres GMP_PARITY_LAYOUTS=looped-half GMP_PARITY_SPHERE_DIVISOR=1 \
    GMP_PARITY_CONFIGS=${GMP_SORT_PARITY_CONFIGS:-200000} GMP_PARITY_MOTIONS=200 \
    timeout 150 "$D/gpu_parity" "gpu_parity_$r" --nocapture --test-threads=1 > "$OUT/parity_spheres_$r.log" 2>&1
  echo "parity spheres $r rc $? $(grep -h 'parity:' "$OUT/parity_spheres_$r.log" | tail -1)"
done
GMP_SORT_MIN=1 GMP_PARITY_SHAPES=spheres GMP_PARITY_LAYOUTS=looped-half GMP_PARITY_CONFIGS=2000 \
  GMP_PARITY_MOTIONS=20 GMP_PARITY_INDICES=1 GMP_PARITY_MOTION_KERNEL=balanced timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$D/gpu_parity" gpu_parity_panda --nocapture --test-threads=1 > "$OUT/memcheck_sorted_panda.log" 2>&1
echo "memcheck rc $? $(grep -h 'ERROR SUMMARY' "$OUT/memcheck_sorted_panda.log" | tail -1)"
