#!/usr/bin/env python3
"""The tree's loop batches, by build or setting: per-batch wall (median, mean, 10th and
90th percentile, max; the timed rounds of every process) and, with --windows, the
fastest and slowest batches' windows (tasks, lanes, span from launch to end seen, GPU
time where timed, host time). Batches over 10 ms (a window's graph built: the loop
widening after its warm-up) are counted apart. Usage: slow-batches.py DIR SHAPE[:ITERS]
PREFIX... (loop CSVs named PREFIX-N.csv, windows CSVs windows-REST where loop-REST)."""
import csv, glob, os, re, statistics as st, sys

d, shape, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
shape, _, iters = shape.partition(":")
def wanted(r):
    return r["shape"] == shape and r["round"] != "0" and (not iters or r["iters"] == iters)
for p in prefixes:
    files = sorted(f for f in glob.glob(os.path.join(d, p + "-*.csv")) if re.fullmatch(re.escape(p) + r"-\d+\.csv", os.path.basename(f)))
    every = sorted(int(r["wall_ns"]) / 1e6 for f in files for r in csv.DictReader(open(f)) if wanted(r))
    walls = [w for w in every if w < 10]
    if not walls:
        continue
    n = len(walls)
    print(f"{p}: {shape}{':' + iters if iters else ''}, {n} timed batches in {len(files)} processes "
          f"({len(every) - n} over 10 ms left out): median {st.median(walls):.2f} ms, mean {st.mean(walls):.2f}, "
          f"p10 {walls[n // 10]:.2f}, p90 {walls[9 * n // 10]:.2f}, max {walls[-1]:.2f}, over 2 ms {sum(w > 2 for w in walls)}")
    batches = []
    for f in files:
        wf = os.path.join(d, os.path.basename(f).replace("loop-", "windows-", 1))
        if not os.path.exists(wf):
            continue
        by = {}
        for r in csv.DictReader(open(wf)):
            if wanted(r):
                by.setdefault(r["round"], []).append(r)
        for rd, ws in by.items():
            span = [round(float(w["end_us"]) - float(w["launched_us"])) for w in ws]
            gpu = [w.get("gpu_us", "") or "-" for w in ws]
            batches.append((float(ws[0]["wall_us"]), os.path.basename(wf), rd, [w["tasks"] for w in ws],
                            [w["lanes"] for w in ws], span, gpu, [round(float(w["host_us"])) for w in ws]))
    batches = sorted(b for b in batches if b[0] < 10_000)
    for b in batches[:2] + batches[-3:]:
        print(f"  wall {b[0]:.0f} us ({b[1]} round {b[2]}): tasks {b[3]} lanes {b[4]} spans {b[5]} gpu {b[6]} host {b[7]}")
