#!/usr/bin/env python3
"""Per flow row, the median of the timed rounds of each build's per-iteration loop
(BUILD-TURN.csv) over the hand-written graph's (graph-TURN.csv); each build's median
wall over old's; its median time after the last submit. Usage: loop-builds.py DIR [BUILDS]."""
import csv, glob, math, os, statistics as st, sys

d = sys.argv[1]
builds = sys.argv[2].split(",") if len(sys.argv) > 2 else None
runs = {}
for f in glob.glob(os.path.join(d, "*.csv")):
    b = os.path.basename(f).rsplit("-", 1)[0]
    for r in csv.DictReader(open(f)):
        if r["round"] == "0":
            continue
        runs.setdefault((r["shape"], int(r["iters"])), {}).setdefault(b, []).append((int(r["wall_ns"]), int(r["submit_ns"])))
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
names = builds or sorted({b for v in runs.values() for b in v if b not in ("graph",)})
print("shape iters | graph ms | " + " ".join(f"{b + '/g':>9}" for b in names) + " | " + " ".join(f"{b + '/old':>11}" for b in names if b != "old") + " | after the last submit ms: " + " ".join(names))
logs = {b: [] for b in names}
within = {b: 0 for b in names}
for k in sorted(runs, key=lambda k: (order.index(k[0]), k[1])):
    m = {b: st.median(w for w, _ in v) / 1e6 for b, v in runs[k].items()}
    tail = {b: st.median(w - s for w, s in v) / 1e6 for b, v in runs[k].items()}
    g = m["graph"]
    for b in names:
        within[b] += m[b] / g <= 1.5
        if b != "old":
            logs[b].append(math.log(m[b] / m["old"]))
    print(f"{k[0]:4} {k[1]:6} | {g:7.3f} | " + " ".join(f"{m[b]/g:9.2f}" for b in names) + " | "
          + " ".join(f"{m[b]/m['old']:11.3f}" for b in names if b != "old") + " | " + " ".join(f"{tail[b]:.3f}" for b in names))
print("geometric mean over old: " + ", ".join(f"{b} {math.exp(sum(v)/len(v)):.3f}" for b, v in logs.items() if v))
print("rows at most 1.5x the graph: " + ", ".join(f"{b} {n}" for b, n in within.items()) + f" of {len(runs)}")
