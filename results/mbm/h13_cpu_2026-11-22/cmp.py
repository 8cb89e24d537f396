"""Per-problem fastest run over interleaved rounds of `gmp bench mbm`, two binaries (A = before,
B = after); medians over problems solved by both in every round; identity of the deterministic
fields in every round."""
import json, glob, statistics as st, sys
root, a_tag, b_tag = sys.argv[1], sys.argv[2], sys.argv[3]
robots = sys.argv[4].split(",") if len(sys.argv) > 4 else ["panda", "ur5", "fetch"]
FIELDS = ["solved", "path_length_before", "path_length_after", "collision_checks", "configs_evaluated"]
def runs(tag, r):
    return [json.load(open(f))["problems"][r] for f in sorted(glob.glob(f"{root}/{tag}_*/{r}/*.json"))]
out = {}
print("| robot | solved by both | rounds | plan median A (ms) | B | ratio | simplify median A (ms) | B | ratio | plan+simplify sum A (s) | B | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in robots:
    A, B = runs(a_tag, r), runs(b_tag, r)
    if not A or not B:
        continue
    n = len(A[0])
    differ = []
    for j in range(n):
        ref = A[0][j]
        for run in A[1:] + B:
            bad = [k for k in FIELDS if run[j][k] != ref[k]]
            if bad:
                differ.append((f"{ref['scene']} #{ref['index']}", bad))
                break
    # Problems whose fields already differ between runs of the same binary (time-limited).
    unstable = []
    for j in range(n):
        for R in (A, B):
            if any(run[j][k] != R[0][j][k] for run in R[1:] for k in FIELDS):
                unstable.append(f"{A[0][j]['scene']} #{A[0][j]['index']}")
                break
    both = [j for j in range(n) if all(R[j]["solved"] for R in A + B)]
    res = {"problems": n, "rounds": [len(A), len(B)], "solved_by_both_in_every_round": len(both),
           "problems_with_any_differing_field": differ,
           "problems_differing_between_runs_of_one_binary": unstable}
    for k in ["planning_time", "simplification_time", "total_time"]:
        # Per problem solved by both: its fastest run of each binary.
        fastest = {tag: [min(run[j][k] for run in R) for j in both] for tag, R in (("a", A), ("b", B))}
        stats = {f"{tag}_{name}": f(v) for tag, v in fastest.items()
                 for name, f in (("median_ms", lambda v: st.median(v) * 1e3), ("sum_s", sum))}
        stats["median_ratio"] = stats["a_median_ms"] / stats["b_median_ms"]
        stats["sum_ratio"] = stats["a_sum_s"] / stats["b_sum_s"]
        res[k] = stats
    out[r] = res
    p, s, t = res["planning_time"], res["simplification_time"], res["total_time"]
    print(f"| {r} | {len(both)}/{n} | {len(A)}+{len(B)} | {p['a_median_ms']:.3f} | {p['b_median_ms']:.3f} | x{p['median_ratio']:.2f} | {s['a_median_ms']:.3f} | {s['b_median_ms']:.3f} | x{s['median_ratio']:.2f} | {t['a_sum_s']:.3f} | {t['b_sum_s']:.3f} | x{t['sum_ratio']:.2f} |")
for r in out:
    print(r, "problems with a differing field (any run vs first A run):", out[r]["problems_with_any_differing_field"],
          "; of which differ between runs of one binary too:", out[r]["problems_differing_between_runs_of_one_binary"])
if len(sys.argv) > 5:
    json.dump(out, open(sys.argv[5], "w"), indent=1)
