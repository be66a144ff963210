#!/usr/bin/env python3
"""Call H's table: the per-iteration loop over the hand-written graph, all timed rounds
and the last six (rounds 7-12, after the widened windows' one build), each row's
medians over both processes. Usage: steady.py DIR (with loop-1.csv, loop-2.csv,
graph-1.csv, graph-2.csv)."""
import csv, os, statistics as st, sys

d = sys.argv[1]
def load(name):
    out = {}
    for r in csv.DictReader(open(os.path.join(d, name))):
        out.setdefault((r["shape"], int(r["iters"])), []).append((int(r["round"]), int(r["wall_ns"]), r["submit_ns"]))
    return out
loops = [load("loop-1.csv"), load("loop-2.csv")]
graphs = [load("graph-1.csv"), load("graph-2.csv")]
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
print("shape iters | loop, all timed | loop, rounds 7-12 | graph | ratio all | ratio 7-12 | submit us (7-12)")
n = 0
for k in sorted(loops[0], key=lambda k: (order.index(k[0]), k[1])):
    la = [w for L in loops for (r, w, _) in L[k] if r > 0]
    l6 = [w for L in loops for (r, w, _) in L[k] if r > 6]
    sub = [int(s) for L in loops for (r, _, s) in L[k] if r > 6 and s]
    g = [w for G in graphs for (r, w, _) in G[k] if r > 0]
    ra, r6 = st.median(la) / st.median(g), st.median(l6) / st.median(g)
    n += r6 <= 1.5
    print(f"{k[0]:4} {k[1]:6} | {st.median(la)/1e3:9.1f} | {st.median(l6)/1e3:9.1f} | {st.median(g)/1e3:9.1f} | "
          f"{ra:5.2f} | {r6:5.2f} | {st.median(sub)/1e3:7.1f}")
print("rows at most 1.5x (rounds 7-12):", n)
