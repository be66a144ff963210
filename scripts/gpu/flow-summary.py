#!/usr/bin/env python3
"""Summarises the flow bench's CSVs of a campaign: per shape and iteration count, the
median wall time of each variant (the timed rounds of every call, warm-up left out),
and each chariot variant over the hand-written CUDA graph of the same build.

Usage: flow-summary.py DIR [OLD NEW]
  DIR holds flow-VERSION-CALL.csv files (VERSION: old or new, as the campaign scripts
  write them; a DIR with only `new` files gives the new build's table alone). OLD and
  NEW name other VERSIONs to compare in their place (e.g. `shared own`: the variants
  run in one process, and each in a process of its own).
Prints, per row, every variant's median (ms) and its ratio over the CUDA graph (the
recorded graph's marked d where the runtime chose the device executor for it); where
both builds ran, chariot's ratio new over old, its wall time new over old beside the
CUDA graph's (the same program in both: the noise floor), chariot's host-cost
breakdown per row (submit, windows' set-up, windows' span: the CSVs' submit_ns,
window_host_ns and window_ns, medians, µs) and the geometric means. Standard library
only.
"""
import collections
import csv
import glob
import math
import statistics
import sys

ORDER = ["lc", "ep", "dc", "mr", "dag", "rnd"]
PARTS = ["submit_ns", "window_host_ns", "window_ns"]


def main(argv):
    if len(argv) not in (2, 4):
        print(__doc__)
        return 2
    old, new = argv[2:4] if len(argv) == 4 else ("old", "new")
    data = collections.defaultdict(list)
    parts = collections.defaultdict(list)
    ways = {}
    builds = []
    for build in [old, new]:
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
                    if r["variant"] == "chariot":
                        for c in PARTS:
                            parts[(r["shape"], int(r["iters"]), c, build)].append(int(r[c]) / 1e3)
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
    if builds == [old, new]:
        rel = []
        for shape, iters in rows:
            ratio = lambda b: med((shape, iters, "chariot", b)) / med((shape, iters, "cuda-graph", b))
            rel.append(ratio(new) / ratio(old))
        print(f"\nchariot (defaults) over the graph, {new} over {old}: geometric mean {gmean(rel):.3f}, "
              f"rows {min(rel):.3f} .. {max(rel):.3f}")
        for v in ["chariot", "cuda-graph"]:
            wall = [med((s, i, v, new)) / med((s, i, v, old)) for s, i in rows]
            print(f"{v} wall time, {new} over {old}: geometric mean {gmean(wall):.4f}, "
                  f"rows {min(wall):.3f} .. {max(wall):.3f}")
        pmed = lambda k: statistics.median(parts[k]) if parts.get(k) else float("nan")
        print(f"\nchariot (defaults), medians in µs, {old} → {new}")
        print(f"{'shape':6}{'iters':>7} | {'wall':>17} | {'submit':>17} | {'set-up':>15} | {'window span':>17}")
        diffs = collections.defaultdict(list)
        for shape, iters in rows:
            w = [med((shape, iters, "chariot", b)) * 1e3 for b in (old, new)]
            diffs["wall"].append(w[1] - w[0])
            cells = [f"{w[0]:>8.0f}{w[1]:>9.0f}"]
            for c in PARTS:
                o, n = pmed((shape, iters, c, old)), pmed((shape, iters, c, new))
                diffs[c].append(n - o)
                cells.append(f"{o:>7.0f}{n:>8.0f}" if c == "window_host_ns" else f"{o:>8.0f}{n:>9.0f}")
            print(f"{shape:6}{iters:>7} | " + " | ".join(cells))
        print(f"mean difference {new} − {old}, µs: " + ", ".join(
            f"{k.replace('_ns', '')} {sum(v) / len(v):+.1f}" for k, v in diffs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
