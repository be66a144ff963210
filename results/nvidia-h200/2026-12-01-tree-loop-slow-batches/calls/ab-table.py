#!/usr/bin/env python3
"""Call O's table: per flow row, the medians of the timed rounds of each build's
per-iteration loop (chariot) and recorded graph, new over old, and each over the
hand-written graph. Usage: ab-table.py DIR."""
import csv, glob, math, os, statistics as st, sys

d = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(d, "*.csv")):
    b = os.path.basename(f)
    build = "graph" if b.startswith("graph-") else ("old" if b.startswith("flow-old-") else "new")
    for r in csv.DictReader(open(f)):
        if r["round"] == "0":
            continue
        runs.setdefault((r["shape"], int(r["iters"])), {}).setdefault((build, r["variant"]), []).append(int(r["wall_ns"]))
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
print("shape iters | graph ms | loop old, new ms (new/old; old/g, new/g) | recorded old, new ms (new/old; old/g, new/g)")
gl, gr = [], []
for k in sorted(runs, key=lambda k: (order.index(k[0]), k[1])):
    m = {key: st.median(v) / 1e6 for key, v in runs[k].items()}
    g = m[("graph", "cuda-graph")]
    lo, ln = m[("old", "chariot")], m[("new", "chariot")]
    ro, rn = m[("old", "chariot-recorded")], m[("new", "chariot-recorded")]
    gl.append(ln / lo); gr.append(rn / ro)
    print(f"{k[0]:4} {k[1]:6} | {g:7.3f} | {lo:7.3f} {ln:7.3f} ({ln/lo:5.3f}; {lo/g:5.2f} {ln/g:5.2f}) | "
          f"{ro:7.3f} {rn:7.3f} ({rn/ro:5.3f}; {ro/g:5.2f} {rn/g:5.2f})")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"geometric mean new/old: loop {gm(gl):.3f}, recorded {gm(gr):.3f}")
