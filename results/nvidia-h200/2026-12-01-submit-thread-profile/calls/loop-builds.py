#!/usr/bin/env python3
"""A call's table over several builds: per flow row, the medians of the timed rounds of
each build's per-iteration loop (B-*.csv) and of the hand-written graph (graph-*.csv),
each build over the first and over the graph, and the time after the last submit.
Usage: loop-builds.py DIR B0 B1 ..."""
import csv, glob, math, os, statistics as st, sys

d, builds = sys.argv[1], sys.argv[2:]
runs = {}
for f in glob.glob(os.path.join(d, "*.csv")):
    b = os.path.basename(f).split("-")[0]
    if b not in builds + ["graph"]:
        continue
    for r in csv.DictReader(open(f)):
        if r["round"] == "0":
            continue
        k = (r["shape"], int(r["iters"]))
        runs.setdefault(k, {}).setdefault(b, []).append((int(r["wall_ns"]), int(r["submit_ns"]), int(r["nodes"])))
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
base = builds[0]
print("shape iters | graph ms | loop ms per build (over " + base + ") | each over the graph | after the last submit ms per build")
logs = {b: [] for b in builds[1:]}
within = {b: 0 for b in builds}
for k in sorted(runs, key=lambda k: (order.index(k[0]), k[1])):
    m = {b: st.median(w for w, _, _ in v) / 1e6 for b, v in runs[k].items()}
    tail = {b: st.median((w - sb) for w, sb, _ in v) / 1e6 for b, v in runs[k].items() if b != "graph"}
    g = m["graph"]
    for b in builds[1:]:
        logs[b].append(math.log(m[b] / m[base]))
    for b in builds:
        within[b] += m[b] / g <= 1.5
    print(f"{k[0]:4} {k[1]:6} | {g:7.3f} | " + " ".join(f"{m[b]:7.3f}" + ("" if b == base else f" ({m[b]/m[base]:.3f})") for b in builds)
          + " | " + " ".join(f"{m[b]/g:5.2f}" for b in builds) + " | " + " ".join(f"{tail[b]:6.3f}" for b in builds))
for b in builds[1:]:
    print(f"geometric mean {b}/{base} {math.exp(sum(logs[b])/len(logs[b])):.3f}")
print("rows at most 1.5x the graph: " + ", ".join(f"{b} {within[b]}" for b in builds) + f" of {len(runs)}")
