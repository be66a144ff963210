#!/usr/bin/env python3
"""A call's table: per flow row, the medians of the timed rounds of each build's
per-iteration loop (old-*.csv, new-*.csv) and of the hand-written graph (graph-*.csv),
new over old, each over the graph; with each build's median submit time a task and
the share of the wall after the last submit. Usage: loop-ab.py DIR."""
import csv, glob, math, os, statistics as st, sys

d = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(d, "*.csv")):
    b = os.path.basename(f).split("-")[0]
    if b not in ("old", "new", "graph") or "windows" in f:
        continue
    for r in csv.DictReader(open(f)):
        if r["round"] == "0":
            continue
        k = (r["shape"], int(r["iters"]))
        runs.setdefault(k, {}).setdefault(b, []).append((int(r["wall_ns"]), int(r["submit_ns"]), int(r["nodes"])))
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
print("shape iters | graph ms | loop old, new ms | new/old | old/g new/g | submit us/task old, new | after the last submit old, new ms")
ratios, rows_old, rows_new = [], 0, 0
for k in sorted(runs, key=lambda k: (order.index(k[0]), k[1])):
    m = {b: st.median(w for w, _, _ in v) / 1e6 for b, v in runs[k].items()}
    s = {b: st.median(sb / n for _, sb, n in v) / 1e3 for b, v in runs[k].items() if b != "graph"}
    tail = {b: st.median((w - sb) for w, sb, _ in v) / 1e6 for b, v in runs[k].items() if b != "graph"}
    g, lo, ln = m["graph"], m["old"], m["new"]
    ratios.append(ln / lo)
    rows_old += lo / g <= 1.5
    rows_new += ln / g <= 1.5
    print(f"{k[0]:4} {k[1]:6} | {g:7.3f} | {lo:7.3f} {ln:7.3f} | {ln/lo:5.3f} | {lo/g:5.2f} {ln/g:5.2f} | "
          f"{s['old']:5.3f} {s['new']:5.3f} | {tail['old']:6.3f} {tail['new']:6.3f}")
gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
print(f"geometric mean new/old {gm:.3f}; rows at most 1.5x the graph: old {rows_old}, new {rows_new} of {len(ratios)}")
