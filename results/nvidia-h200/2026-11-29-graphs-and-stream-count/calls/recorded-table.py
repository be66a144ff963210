#!/usr/bin/env python3
"""The recorded graph over the hand-written graph, each run in a process of its own, per
call (B to G) and the median over them. Usage: recorded-table.py FOLDER (this results
folder); unpacks the calls' flow-csv.tgz into a temporary folder. Standard library only."""
import collections, csv, glob, math, os, statistics, sys, tarfile, tempfile

top = sys.argv[1]
tmp = tempfile.mkdtemp()
calls = {"B": "b", "C": "lanes/c", "D": "lanes/d", "E": "lanes/e", "F": "lanes/f", "G": "lanes/g"}
rows = [(s, i) for s in ["lc", "ep", "dc", "mr", "dag", "rnd"] for i in ["0", "1000", "10000"]]
out = {}
for call, sub in calls.items():
    dest = os.path.join(tmp, call)
    tarfile.open(os.path.join(top, sub, "flow-csv.tgz")).extractall(dest)
    graph = "flow-own-graph-*.csv" if call == "B" else "graph-*.csv"
    rec = "flow-own-recorded-*.csv" if call == "B" else ("flow-lanes-recorded-*.csv" if call == "C" else "flow-new-recorded-*.csv")
    d, way = collections.defaultdict(list), {}
    for pat in (graph, rec):
        for f in glob.glob(os.path.join(dest, "csv", pat)):
            for r in csv.DictReader(open(f)):
                if r.get("way"):
                    way[(r["shape"], r["iters"])] = r["way"]
                if r["round"] != "0":
                    d[(r["shape"], r["iters"], r["variant"])].append(int(r["wall_ns"]))
    med = lambda k, v: statistics.median(d[(k[0], k[1], v)])
    out[call] = {k: (med(k, "chariot-recorded") / med(k, "cuda-graph"), way.get(k, "")) for k in rows}
print("recorded graph over the hand-written graph, each in a process of its own (medians per call; d: the runtime kept the device executor)")
print(f"{'shape':5}{'iters':>7} | " + " ".join(f"{c:>6}" for c in out) + " | median")
meds = []
for k in rows:
    v = [out[c][k][0] for c in out]
    meds.append(statistics.median(v))
    print(f"{k[0]:5}{k[1]:>7} | " + " ".join(f"{x:5.2f}{'d' if out[c][k][1] == 'device' else ' '}" for x, c in zip(v, out)) + f" | {meds[-1]:5.2f}")
print(f"geometric mean of the row medians {math.exp(statistics.mean(map(math.log, meds))):.3f}; "
      f"rows above 1.0: {sum(x > 1.0 for x in meds)}; above 1.02: {sum(x > 1.02 for x in meds)}")
