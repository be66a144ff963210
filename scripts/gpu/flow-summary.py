#!/usr/bin/env python3
"""Summarises the flow bench's CSVs of a campaign: per shape and iteration count, the
median wall time of each variant (the timed rounds of every call, warm-up left out),
and each chariot variant over the hand-written CUDA graph of the same build.

Usage: flow-summary.py DIR
  DIR holds flow-VERSION-CALL.csv files (VERSION: old or new, as the campaign scripts
  write them; a DIR with only `new` files gives the new build's table alone).
Prints, per row, every variant's median (ms) and its ratio over the CUDA graph (the
recorded graph's marked d where the runtime chose the device executor for it); where
both builds ran, chariot's ratio new over old, and the geometric means. Standard
library only.
"""
import collections
import csv
import glob
import math
import statistics
import sys

ORDER = ["lc", "ep", "dc", "mr", "dag", "rnd"]


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    data = collections.defaultdict(list)
    ways = {}
    builds = []
    for build in ["old", "new"]:
        files = glob.glob(f"{argv[1]}/flow-{build}-*.csv")
        if files:
            builds.append(build)
        for f in files:
            with open(f) as fh:
                for r in csv.DictReader(fh):
                    if r.get("way"):
                        ways[(r["shape"], int(r["iters"]), build)] = r["way"]
                    if int(r["round"]) == 0:
                        continue
                    data[(r["shape"], int(r["iters"]), r["variant"], build)].append(int(r["wall_ns"]) / 1e6)
    if not data:
        print(f"no flow-*.csv in {argv[1]}")
        return 1
    rows = sorted({(k[0], k[1]) for k in data}, key=lambda x: (ORDER.index(x[0]) if x[0] in ORDER else 99, x[1]))
    variants = [v for v in ["chariot", "chariot-recorded", "chariot-host", "chariot-device", "device-graph", "cuda-graph"]
                if any(k[2] == v for k in data)]
    med = lambda k: statistics.median(data[k]) if data.get(k) else float("nan")
    gmean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
    for build in builds:
        print(f"\n{build} build: medians (ms) and ratio over the CUDA graph")
        print(f"{'shape':6}{'iters':>7} | " + " | ".join(f"{v:>16} {'/g':>6}" for v in variants))
        ratios = collections.defaultdict(list)
        for shape, iters in rows:
            g = med((shape, iters, "cuda-graph", build))
            cells = []
            for v in variants:
                m = med((shape, iters, v, build))
                r = m / g if g == g and g > 0 else float("nan")
                if r == r:
                    ratios[v].append(r)
                mark = "d" if v == "chariot-recorded" and ways.get((shape, iters, build)) == "device" else " "
                cells.append(f"{m:>16.3f} {r:>6.2f}{mark}")
            print(f"{shape:6}{iters:>7} | " + " | ".join(cells))
        print("geometric means over the CUDA graph: " + ", ".join(f"{v} {gmean(x):.3f}" for v, x in ratios.items()))
    if builds == ["old", "new"]:
        rel = []
        for shape, iters in rows:
            ratio = lambda b: med((shape, iters, "chariot", b)) / med((shape, iters, "cuda-graph", b))
            rel.append(ratio("new") / ratio("old"))
        print(f"\nchariot (defaults) over the graph, new build over old: geometric mean {gmean(rel):.3f}, "
              f"rows {min(rel):.3f} .. {max(rel):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
