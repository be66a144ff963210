#!/usr/bin/env python3
"""Call S: chariot's recorded graph over the hand-written graph, three ways: each in a
process of its own (graph-N, recorded-N), both in one process with their own sinks
(own2-N), both in one process with the hand-written graph writing chariot's sink
(same-N). Medians of every process's timed rounds, then the median over the three turns.
Usage: tar xzf s/csv.tgz -C /tmp && call-s-summary.py /tmp/csv (this folder's call S).
Standard library only."""
import collections, csv, glob, math, os, statistics, sys

d = sys.argv[1]
rows = [(s, i) for s in ["lc", "ep", "dc", "mr", "dag", "rnd"] for i in ["0", "1000", "10000"]]

def medians(pattern, variant):
    """Per turn: {row: median wall ns} of `variant` in the files matching `pattern`."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, pattern))):
        v, way = collections.defaultdict(list), {}
        for r in csv.DictReader(open(f)):
            if r["variant"] == variant and r["round"] != "0":
                v[(r["shape"], r["iters"])].append(int(r["wall_ns"]))
            if r.get("way"):
                way[(r["shape"], r["iters"])] = r["way"]
        out.append(({k: statistics.median(x) for k, x in v.items()}, way))
    return out

ways = {
    "own processes": (medians("graph-*.csv", "cuda-graph"), medians("recorded-*.csv", "chariot-recorded")),
    "one process, own sinks": (medians("own2-*.csv", "cuda-graph"), medians("own2-*.csv", "chariot-recorded")),
    "one process, one sink": (medians("same-*.csv", "cuda-graph"), medians("same-*.csv", "chariot-recorded")),
}
print("chariot's recorded graph over the hand-written CUDA graph (medians of 5 rounds a process, median over 3 turns; d: device executor kept)")
print(f"{'shape':5}{'iters':>7} | " + " | ".join(f"{w:>22}" for w in ways) + " | graph µs: own sink, chariot's sink")
geo = {w: [] for w in ways}
for k in rows:
    cells = []
    for w, (g, r) in ways.items():
        ratios = [rt[0][k] / gt[0][k] for gt, rt in zip(g, r)]
        m = statistics.median(ratios)
        geo[w].append(m)
        dev = "d" if any(rt[1].get(k) == "device" for rt in r) else " "
        cells.append(f"{m:5.3f}{dev} ({min(ratios):.3f}–{max(ratios):.3f})")
    g_own = statistics.median(gt[0][k] for gt in ways["own processes"][0]) / 1e3
    g_same = statistics.median(gt[0][k] for gt in ways["one process, one sink"][0]) / 1e3
    print(f"{k[0]:5}{k[1]:>7} | " + " | ".join(f"{c:>22}" for c in cells) + f" | {g_own:8.1f} {g_same:8.1f}")
for w, v in geo.items():
    print(f"{w}: geometric mean {math.exp(statistics.mean(map(math.log, v))):.3f}; rows above 1.00: "
          f"{sum(x > 1.0 for x in v)}; above 1.01: {sum(x > 1.01 for x in v)}; max {max(v):.3f}")
