#!/usr/bin/env python3
"""From the new build's windows (windows-new-*.csv of call C): per flow row, the medians
over the timed batches of when the last window was seen to end after the last submit,
and of when `synchronize` returned after that (µs). The windows' times count from the
first window's queueing; that is put at 64 submits after the first (the first cut),
at the batch's mean submit time a task: an estimate. Usage: windows-tail.py DIR."""
import collections, csv, glob, os, statistics as st, sys

NODES = {"lc": 1024, "ep": 1024, "dc": 1023, "mr": 1088, "dag": 812, "rnd": 1024}
rows = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "windows-new-*.csv")):
    batches = collections.defaultdict(list)
    for r in csv.DictReader(open(f)):
        if r["round"] != "0":
            batches[(r["shape"], int(r["iters"]), r["round"])].append(r)
    for (shape, iters, _), ws in batches.items():
        submit, wall = float(ws[0]["submit_us"]), float(ws[0]["wall_us"])
        offset = 64 * submit / NODES[shape]
        end = max(float(w["end_us"]) for w in ws) + offset
        rows[(shape, iters)].append((end - submit, wall - end, len(ws)))
print("shape iters | last window's end after the last submit µs | synchronize's return after it µs | windows (batches)")
for k in sorted(rows, key=lambda k: (list(NODES).index(k[0]), k[1])):
    v = rows[k]
    counts = collections.Counter(n for _, _, n in v)
    print(f"{k[0]:4} {k[1]:6} | {st.median(a for a, _, _ in v):7.1f} | {st.median(b for _, b, _ in v):7.1f} | {dict(counts)}")
