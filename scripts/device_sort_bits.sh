#!/usr/bin/env bash
# On the GPU machine (after scripts/device_prepare.sh here; device tool with carry [".device"]):
# the warp-coherent order's key with other bit shares (GMP_SORT_BITS), Panda sphere model, the
# three slowest MBM scenes, one process per share; $OUT/bits_<share>/ and a summary line each.
set -u
cd "$(dirname "$0")/.."
D=.device
OUT="${OUT:-/tmp/gmp-device-out}"
mkdir -p "$OUT"
. scripts/device_env.sh
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
