"""Paired before/after comparison of four runs in this folder:
python3 compare.py [BEFORE_1 BEFORE_2 AFTER_1 AFTER_2] (default before_1 before_2 after_1 after_2).

For each problem solved in all four runs: the smaller of the two runs of each binary
(the machine was shared, so the faster run is the less disturbed one), then medians and
sums over problems, and the median of the per-problem after/before ratios.
"""
import glob
import json
import statistics as st
import sys


def load(run):
    d = json.load(open(glob.glob(f"{run}/*.json")[0]))
    return {(robot, r["scene"], r["index"]): r for robot, recs in d["problems"].items() for r in recs}


names = sys.argv[1:5] if len(sys.argv) >= 5 else ["before_1", "before_2", "after_1", "after_2"]
runs = {r: load(n) for r, n in zip(["before_1", "before_2", "after_1", "after_2"], names)}
print(f"Runs: before = {names[0]}, {names[1]}; after = {names[2]}, {names[3]}.\n")
print("| robot | problems (solved in all 4 runs) | phase | median before (ms) | median after (ms) | median of per-problem ratios after/before | sum before (s) | sum after (s) | same path length and check counts (run 1 vs run 1) |")
print("|---|---|---|---|---|---|---|---|---|")
for robot in ["panda", "ur5", "fetch"]:
    keys = [k for k in runs["before_1"] if k[0] == robot and all(runs[r][k]["solved"] for r in runs)]
    same = sum(
        1
        for k in keys
        if runs["before_1"][k]["path_length_after"] == runs["after_1"][k]["path_length_after"]
        and runs["before_1"][k]["collision_checks"] == runs["after_1"][k]["collision_checks"]
        and runs["before_1"][k]["configs_evaluated"] == runs["after_1"][k]["configs_evaluated"]
    )
    for field, name in [("planning_time", "plan"), ("simplification_time", "simplify")]:
        b = {k: min(runs["before_1"][k][field], runs["before_2"][k][field]) for k in keys}
        a = {k: min(runs["after_1"][k][field], runs["after_2"][k][field]) for k in keys}
        ratios = [a[k] / b[k] for k in keys if b[k] > 0]
        print(
            f"| {robot} | {len(keys)} | {name} | {st.median(b.values()) * 1e3:.2f} | "
            f"{st.median(a.values()) * 1e3:.2f} | {st.median(ratios):.3f} | "
            f"{sum(b.values()):.2f} | {sum(a.values()):.2f} | {same} of {len(keys)} |"
        )
