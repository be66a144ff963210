#!/usr/bin/env python3
"""Summarises a campaign of the flow bench's MUSTARD rnd runs by blocks a node and D:
for each blocks-a-node value B, build label L (optional) and D, the median wall time
(ms) of every variant over the timed rounds of every call (round 0, the warm-up, left
out), how many of chariot's (defaults) runs replayed, the recorded graph's way; and,
per B and L, D = 1 over D = 2 for each variant (above 1: faster at D = 2).

Usage: flow-rnd-scaling.py DIR
  DIR holds rnd4096-bB-dD-CALL.csv or rnd4096-bB-L-dD-CALL.csv (the campaign scripts'
  names; L names a build). Where a label ran at D = 2 only, its D = 1 is that of a
  label that ran it (a build that differs only at D >= 2).
Standard library only.
"""
import csv
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

VARIANTS = ["chariot", "chariot-host", "chariot-recorded", "cuda-graph"]
NAME = re.compile(r"rnd\d+-b(\d+)-(?:([a-z]+)-)?d(\d+)-(\d+)\.csv$")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    walls, replayed, ways = defaultdict(list), defaultdict(list), defaultdict(set)
    for path in glob.glob(os.path.join(argv[1], "rnd*.csv")):
        m = NAME.search(path)
        if not m:
            continue
        b, label, d = int(m.group(1)), m.group(2) or "", int(m.group(3))
        with open(path) as f:
            for row in csv.DictReader(f):
                if int(row["round"]) == 0:
                    continue
                v = row["variant"]
                walls[(b, label, d, v)].append(int(row["wall_ns"]) / 1e6)
                if v == "chariot":
                    replayed[(b, label, d)].append(int(row["replayed_tasks"]) > 0)
                if v == "chariot-recorded":
                    ways[(b, label, d)].add(row["way"])
    if not walls:
        print(f"no rnd CSVs in {argv[1]}")
        return 1
    labels = sorted({k[1] for k in walls})
    med = lambda key: statistics.median(walls[key]) if walls[key] else float("nan")
    print("medians in ms over the timed rounds of all calls; D1/D2 per variant (above 1: faster at D = 2)")
    head = " | ".join(f"{v:>16}" for v in VARIANTS)
    print(f"{'blocks':>6} {'build':>6} {'D':>2} | {head} | replayed | recorded way")
    for b in sorted({k[0] for k in walls}):
        for label in labels:
            ds = sorted({k[2] for k in walls if k[0] == b and k[1] == label})
            for d in ds:
                row = " | ".join(f"{med((b, label, d, v)):>16.3f}" for v in VARIANTS)
                rp = replayed[(b, label, d)]
                way = ",".join(sorted(ways[(b, label, d)]))
                print(f"{b:>6} {label:>6} {d:>2} | {row} | {sum(rp):>3}/{len(rp):<4} | {way}")
            if 2 in ds:
                with_d1 = [x for x in labels if walls[(b, x, 1, VARIANTS[0])]]
                base = label if 1 in ds else (with_d1[0] if with_d1 else label)
                ratios = [med((b, base, 1, v)) / med((b, label, 2, v)) for v in VARIANTS]
                print(f"{b:>6} {label:>6} D1/D2 | " + " | ".join(f"{x:>15.2f}x" for x in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
