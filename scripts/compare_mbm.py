#!/usr/bin/env python3
"""Compares two `gmp bench mbm` reports (JSON, optionally gzipped) problem by problem.

    python3 scripts/compare_mbm.py BASE.json[.gz] OTHER.json[.gz]

Prints, for the problems both solved: how many the other run planned exactly as the base
(same collision-check count and winning attempt 0: with parallel attempts, a problem attempt 0
solved alone within its solo work), the median per-problem time ratio other/base of planning
and of simplification on those (the same work in both runs, so the ratio is the machine's drift
between the two passes), and for the rest the median planning-time ratio and the summed
planning times. Also the problems only one run solved.
"""
import gzip
import json
import statistics
import sys


def records(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        report = json.load(f)
    out = {}

    def walk(o):
        if isinstance(o, dict):
            if {'planning_time', 'scene', 'index', 'solved'} <= o.keys():
                out[(o['scene'], o['index'])] = o
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(report)
    return out


def median_ratio(keys, a, b, field):
    vals = [b[k][field] / a[k][field] for k in keys if a[k][field] > 0]
    return statistics.median(vals) if vals else float('nan')


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, other = records(sys.argv[1]), records(sys.argv[2])
    both = [k for k in base if k in other and base[k]['solved'] and other[k]['solved']]
    same = [k for k in both
            if base[k]['collision_checks'] == other[k]['collision_checks']
            and other[k].get('winning_attempt', 0) == 0]
    rest = [k for k in both if k not in same]
    print(f'solved by both: {len(both)}; only base: '
          f'{sum(1 for k in base if base[k]["solved"] and not other.get(k, {}).get("solved"))}; '
          f'only other: '
          f'{sum(1 for k in other if other[k]["solved"] and not base.get(k, {}).get("solved"))}')
    print(f'planned alike: {len(same)}: median ratio other/base planning '
          f'{median_ratio(same, base, other, "planning_time"):.3f}, simplification '
          f'{median_ratio(same, base, other, "simplification_time"):.3f}')
    if rest:
        print(f'planned differently: {len(rest)}: median ratio planning '
              f'{median_ratio(rest, base, other, "planning_time"):.3f}; summed planning '
              f'{sum(base[k]["planning_time"] for k in rest):.2f} s -> '
              f'{sum(other[k]["planning_time"] for k in rest):.2f} s')


if __name__ == '__main__':
    main()
