#!/usr/bin/env python3
"""Where a recorded graph's run spends its time, from the flow bench's CSVs.

Usage: flow-recorded-parts.py DIR [BUILD ...]
  DIR holds flow-BUILD-CALL.csv files (the campaign scripts' names; BUILD defaults to
  old, mid, new and spin, those present). For each build and row (shape, iterations), the
  timed rounds of every call pooled, medians: the recorded graph's run over the
  hand-written CUDA graph's, both walls (ms), and the run's parts (µs): submit (the
  `run()` call), waited (queued to launched: the dispatcher's pick-up,
  `ReplayedWindow::waited_ns`; 0 in a build whose CSV has no `window_waited_ns`),
  span (launch to completion seen) and the rest (completion seen to `synchronize`
  returning, and in such a build the pick-up too). A run that the calling thread
  launched itself inside `run()` (`windows_by_caller` > 0; the column `caller` gives
  the share of such runs) overlaps its submit with its waited and span: its rest is
  the wall less waited and span (so it holds the first steps of `run()` before the
  run is queued, a few µs); a run the dispatcher launched was queued as `run()`
  ended, and its rest is the wall less submit, waited and span. Then the rows above
  1.0 and the geometric mean of the ratios. Standard library only.
"""
import collections
import csv
import glob
import math
import statistics
import sys

ORDER = ["lc", "ep", "dc", "mr", "dag", "rnd"]


def load(root, build):
    runs, graph = collections.defaultdict(list), collections.defaultdict(list)
    for path in glob.glob(f"{root}/flow-{build}-*.csv"):
        with open(path) as fh:
            for r in csv.DictReader(fh):
                if r["round"] == "0":
                    continue
                key = (r["shape"], int(r["iters"]))
                if r["variant"] == "cuda-graph":
                    graph[key].append(int(r["wall_ns"]))
                elif r["variant"] == "chariot-recorded":
                    wall, sub, span = int(r["wall_ns"]), int(r["submit_ns"]), int(r["window_ns"])
                    waited = int(r.get("window_waited_ns") or 0)
                    caller = int(r.get("windows_by_caller") or 0) > 0
                    rest = wall - waited - span - (0 if caller else sub)
                    runs[key].append((wall, sub, waited, span, rest, r["way"][:1], caller))
    return runs, graph


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    root, builds = argv[1], argv[2:] or ["old", "mid", "new", "spin"]
    shown = 0
    for build in builds:
        runs, graph = load(root, build)
        if not runs:
            continue
        shown += 1
        print(f"{build}: recorded run over the CUDA graph; medians, walls ms, parts µs")
        print(f"  {'shape':<5} {'iters':>5} {'ratio':>6} {'wall':>8} {'graph':>8} {'submit':>7} {'waited':>7} {'span':>9} {'rest':>7} way caller")
        ratios = []
        for key in sorted(runs, key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else 99, k[1])):
            v = runs[key]
            med = lambda i: statistics.median(x[i] for x in v)
            g = statistics.median(graph[key]) if graph.get(key) else float("nan")
            ratio = med(0) / g
            ratios.append(ratio)
            ways = "".join(sorted({x[5] for x in v}))
            print(f"  {key[0]:<5} {key[1]:>5} {ratio:>6.3f} {med(0) / 1e6:>8.3f} {g / 1e6:>8.3f} {med(1) / 1e3:>7.1f} "
                  f"{med(2) / 1e3:>7.1f} {med(3) / 1e3:>9.0f} {med(4) / 1e3:>7.1f} {ways:<3} "
                  f"{sum(x[6] for x in v) / len(v):>6.0%}")
        good = [r for r in ratios if r == r]
        gmean = math.exp(sum(map(math.log, good)) / len(good)) if good else float("nan")
        print(f"  rows above 1.0: {sum(r > 1 for r in good)} of {len(good)}; geometric mean {gmean:.3f}")
    if not shown:
        print(f"no flow-{{{','.join(builds)}}}-*.csv with recorded runs in {root}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
