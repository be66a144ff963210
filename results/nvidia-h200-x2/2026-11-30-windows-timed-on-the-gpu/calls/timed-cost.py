#!/usr/bin/env python3
"""Per row, the median over processes of each process's median timed run (warm-up left
out), for two builds' flow CSVs in DIR (flow-A-VARIANTn.csv): A's, B's, B − A and B/A,
for the recorded graph and the per-iteration loop. Usage: timed-cost.py DIR A B"""
import csv, glob, math, statistics, sys

ROWS = [(s, i) for s in ["lc", "ep", "dc", "mr", "dag", "rnd"] for i in ["0", "1000", "10000"]]


def main(d, a, b):
    for var in ["recorded", "chariot"]:
        ratios = []
        print(f"== {var}: µs, median over processes [their range]")
        for shape, it in ROWS:
            m, rng = {}, {}
            for build in [a, b]:
                v = []
                for f in glob.glob(f"{d}/flow-{build}-{var}*.csv"):
                    r = [int(x["wall_ns"]) for x in csv.DictReader(open(f))
                         if x["shape"] == shape and x["iters"] == it and x["round"] != "0"]
                    if r:
                        v.append(statistics.median(r) / 1e3)
                if not v:
                    break
                m[build], rng[build] = statistics.median(v), (min(v), max(v))
            if len(m) < 2:
                continue
            ratios.append(m[b] / m[a])
            print(f"{shape:4} {it:>6} {a} {m[a]:9.1f} [{rng[a][0]:.1f}-{rng[a][1]:.1f}]  "
                  f"{b} {m[b]:9.1f} [{rng[b][0]:.1f}-{rng[b][1]:.1f}]  {m[b]-m[a]:+7.1f}  x{m[b]/m[a]:.3f}")
        if ratios:
            print(f"geometric mean {b}/{a}: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
