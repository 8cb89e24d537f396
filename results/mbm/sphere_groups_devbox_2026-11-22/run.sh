#!/bin/bash
export GMP_DATA=/work/shared/data/mbm
for rep in 1 2; do
for cfg in "panda spheres 20" "panda polytopes 20" "ur5 spheres 20" "ur5 polytopes 20" "fetch spheres 8" "fetch polytopes 8"; do
  set -- $cfg
  for which in base new; do
    bin=/work/target/release/gmp; [ $which = base ] && bin=/work/target-h1/release/gmp
    out=$OUT/${1}_${2}_${which}_r$rep
    $bin bench mbm --robots $1 --shapes $2 --problems $3 --out $out > $out.log 2>&1
    echo "$1 $2 $which r$rep $(grep 'all\*\*' $out/*.md) $(grep 'wall time of the pass' $out/*.md | sed 's/.*(//')"
  done
done
done
