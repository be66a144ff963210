#!/usr/bin/env python3
"""Per blocks a node B, build and D: the median wall (ms) of chariot's defaults over the
rounds from FROM on (the steady state: the first replayed batch builds the windows'
graphs, and the one that goes wide builds them again), every call's; and D1/D2.
Usage: steady.py DIR [FROM=4]"""
import csv, glob, re, statistics, sys
from collections import defaultdict
NAME = re.compile(r"rnd\d+-b(\d+)-([a-z]+)-d(\d+)-(\d+)\.csv$")
d, frm = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4
walls = defaultdict(list)
for f in glob.glob(f"{d}/rnd4096-*.csv"):
    m = NAME.search(f)
    if not m:
        continue
    b, build, gpus, _ = m.groups()
    for x in csv.DictReader(open(f)):
        if x["variant"] == "chariot" and int(x["round"]) >= frm:
            walls[(int(b), build, int(gpus))].append(int(x["wall_ns"]) / 1e6)
print(f"chariot's defaults, rounds {frm} on: median ms [min-max] (runs)")
for b in sorted({k[0] for k in walls}):
    for build in sorted({k[1] for k in walls if k[0] == b}):
        v = {g: walls[(b, build, g)] for g in (1, 2) if walls[(b, build, g)]}
        cells = [f"D={g} {statistics.median(x):7.2f} [{min(x):.2f}-{max(x):.2f}] ({len(x)})" for g, x in v.items()]
        ratio = statistics.median(v[1]) / statistics.median(v[2]) if len(v) == 2 else float("nan")
        print(f"B={b:<4} {build:4} " + "  ".join(cells) + f"  D1/D2 {ratio:.2f}x")
