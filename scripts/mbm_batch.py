#!/usr/bin/env python3
"""Writes a `gmp plan --batch` file from the MotionBenchMaker problems of one robot and scene.

Usage: scripts/mbm_batch.py ROBOT SCENE OUT.yaml [--count N] [--data DIR]

The starts and goals of problems 1..N of SCENE (in planning-group joint order, clamped to the
URDF's limits as `gmp plan --request` snaps them) go into one list; plan them in the scene of
one problem (e.g. `.../problems/SCENE_ROBOT/scene0001.yaml`, extracted from problems.tar.bz2),
where the ends of the other problems may be in collision (each such problem gets its own
error in the report). Needs PyYAML. The file is derived from the MBM data: keep it out of the
repository.
"""
import argparse
import re
import tarfile

import yaml


def limits(urdf_text):
    out = {}
    for m in re.finditer(r'<joint\s+name="([^"]+)"[^>]*type="(revolute|prismatic)".*?<limit([^>]*)>', urdf_text, re.S):
        lo = re.search(r'lower="([^"]+)"', m.group(3))
        hi = re.search(r'upper="([^"]+)"', m.group(3))
        if lo and hi:
            out[m.group(1)] = (float(lo.group(1)), float(hi.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("robot")
    ap.add_argument("scene")
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--data", default="../shared/data/mbm")
    a = ap.parse_args()
    base = f"{a.data}/{a.robot}"
    lim = limits(open(f"{base}/{a.robot}.urdf").read())
    items = []
    with tarfile.open(f"{base}/problems.tar.bz2") as tar:
        for i in range(1, a.count + 1):
            name = f"problems/{a.scene}_{a.robot}/request{i:04d}.yaml"
            try:
                req = yaml.safe_load(tar.extractfile(name))
            except KeyError:
                break
            js = req["start_state"]["joint_state"]
            start = dict(zip(js["name"], js["position"]))
            goal = {c["joint_name"]: c["position"] for c in req["goal_constraints"][0]["joint_constraints"]}
            joints = [c["joint_name"] for c in req["goal_constraints"][0]["joint_constraints"]]
            joints.sort(key=lambda n: js["name"].index(n) if n in js["name"] else len(js["name"]))

            def clamp(n, v):
                lo, hi = lim.get(n, (v, v))
                return min(max(v, lo), hi)

            items.append({
                "name": f"{a.scene}_{i:04d}",
                "start": [clamp(n, start[n]) for n in joints],
                "goal": [clamp(n, goal[n]) for n in joints],
            })
    with open(a.out, "w") as f:
        yaml.safe_dump(items, f, default_flow_style=None)
    print(f"{a.out}: {len(items)} problems of {a.robot} {a.scene}")


if __name__ == "__main__":
    main()
