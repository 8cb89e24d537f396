#!/bin/bash
# usage: ab.sh OUTDIR ROUNDS ROBOTS TAG1 TAG2 ...  (binaries /work/target-h1/gmp-TAG)
out=$1; rounds=$2; robots=$3; shift 3
export GMP_DATA=/work/shared/data/mbm
for i in $(seq 1 $rounds); do for r in ${robots//,/ }; do for t in "$@"; do
  /work/target-h1/gmp-$t bench mbm --robots $r --problems 10 --out $out/${t}_$i/$r > /dev/null 2>&1
done; done; done
echo done
