#!/usr/bin/env bash
# Sourced by the device scripts (scripts/device_gpu.sh, scripts/device_mbm.sh) on the GPU
# machine, from the repository root, with D (the staged folder) and OUT (results): points
# GMP_DATA at the staged MotionBenchMaker data and unpacks its problems into GMP_CACHE.
# D and OUT default to .device and /tmp/gmp-device-out (created).
D="${D:-.device}"
OUT="${OUT:-/tmp/gmp-device-out}"
mkdir -p "$OUT"
export GMP_DATA="$PWD/$D/data/mbm"
export GMP_CACHE="${TMPDIR:-/tmp}/gmp-mbm-cache"
# The MBM loader unpacks problems.tar.bz2 with `tar -xjf`; without bzip2, unpack with Python
# into the same cache layout (<cache>/<robot>/problems + .complete).
if ! command -v bzip2 >/dev/null 2>&1; then
  for r in panda ur5 fetch; do
    [ -f "$GMP_CACHE/$r/.complete" ] && continue
    python3 -c 'import sys, tarfile, pathlib
src, dst = sys.argv[1], pathlib.Path(sys.argv[2])
dst.mkdir(parents=True, exist_ok=True)
tarfile.open(src, "r:bz2").extractall(dst)
(dst / ".complete").write_text("ok")' "$GMP_DATA/$r/problems.tar.bz2" "$GMP_CACHE/$r" ||
      echo "device_gpu: cannot unpack $r problems (no bzip2, python3 failed)"
  done
fi
