"""Per-problem minimum over interleaved rounds of `gmp bench mbm` (before vs after), medians
over the problems both binaries solved in every round; identity of the deterministic fields."""
import json, glob, statistics as st, sys
root = sys.argv[1]; rounds = int(sys.argv[2])
def load(tag, r, i):
    return json.load(open(glob.glob(f"{root}/{tag}_{i}/{r}/*.json")[0]))["problems"][r]
out = {}
lines = []
for r in ["panda", "ur5", "fetch"]:
    B = [load("before", r, i) for i in range(1, rounds + 1)]
    A = [load("after", r, i) for i in range(1, rounds + 1)]
    n = len(B[0])
    same = {k: 0 for k in ["solved", "path_length_before", "path_length_after", "collision_checks", "configs_evaluated"]}
    both = []
    differ = []
    for j in range(n):
        x, y = B[0][j], A[0][j]
        ok = True
        for k in same:
            if x[k] == y[k]:
                same[k] += 1
            else:
                ok = False
        if not ok:
            differ.append(f"{x['scene']} #{x['index']}")
        if all(R[j]["solved"] for R in A + B):
            both.append(j)
    def mins(R, k): return [min(run[j][k] for run in R) for j in both]
    res = {"problems": n, "solved_before_round1": sum(p["solved"] for p in B[0]),
           "solved_after_round1": sum(p["solved"] for p in A[0]),
           "solved_by_both_in_every_round": len(both),
           "identical_fields_round1": same, "problems_differing_round1": differ}
    for k in ["planning_time", "simplification_time", "total_time"]:
        b, a = mins(B, k), mins(A, k)
        res[k] = {"before_median_ms": st.median(b) * 1e3, "after_median_ms": st.median(a) * 1e3,
                  "median_ratio": st.median(b) / st.median(a),
                  "before_sum_s": sum(b), "after_sum_s": sum(a), "sum_ratio": sum(b) / sum(a)}
    out[r] = res
    lines.append(f"| {r} | {len(both)}/{n} | {res['planning_time']['before_median_ms']:.3f} | {res['planning_time']['after_median_ms']:.3f} | x{res['planning_time']['median_ratio']:.2f} | {res['simplification_time']['before_median_ms']:.3f} | {res['simplification_time']['after_median_ms']:.3f} | x{res['simplification_time']['median_ratio']:.2f} | {res['total_time']['before_sum_s']:.3f} | {res['total_time']['after_sum_s']:.3f} | x{res['total_time']['sum_ratio']:.2f} |")
print("| robot | solved by both | plan median before (ms) | after | ratio | simplify median before (ms) | after | ratio | plan+simplify sum before (s) | after | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(lines))
json.dump(out, open(f"{root}/summary.json", "w"), indent=1)
for r in out:
    print(r, "identical fields (round 1):", out[r]["identical_fields_round1"], "differing:", out[r]["problems_differing_round1"])
