#!/usr/bin/env python3
"""Where the end of chariot's per-iteration runs goes, from the flow bench's window CSVs
(`flow --windows FILE`): per build, shape and iteration count, the medians over the
timed runs (round 0, the warm-up, left out) of the user's submit time, of when the
last window was seen to end, and of the tail: wall time minus that end, the time from
the batch's last completion seen to `synchronize` returning (ending the last tasks,
building the report, freeing what the batch left).

The windows' times are kept from the run's first window's queueing; that window is
queued at its last task's submit, placed here at submit × its tasks / all tasks (the
loop submits at an even pace), so the end is approximate to a few µs.

Usage: flow-window-tails.py DIR BUILD...
  DIR holds windows-BUILD-CALL.csv files. Standard library only.
"""
import collections
import csv
import glob
import statistics
import sys

ORDER = ["lc", "ep", "dc", "mr", "dag", "rnd"]


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    rows = {}
    for build in argv[2:]:
        files = sorted(glob.glob(f"{argv[1]}/windows-{build}-*.csv"))
        if not files:
            print(f"no windows-{build}-*.csv in {argv[1]}", file=sys.stderr)
            return 1
        parts = collections.defaultdict(lambda: ([], [], []))
        for f in files:
            runs = collections.defaultdict(list)
            with open(f) as fh:
                for r in csv.DictReader(fh):
                    if r["round"] != "0":
                        runs[(f, r["shape"], int(r["iters"]), r["round"])].append(r)
            for (_, shape, iters, _), ws in runs.items():
                submit, wall = float(ws[0]["submit_us"]), float(ws[0]["wall_us"])
                tasks = sum(int(w["tasks"]) for w in ws)
                first = submit * int(ws[0]["tasks"]) / tasks
                end = max(float(w["end_us"]) for w in ws) + first
                s, e, t = parts[(shape, iters)]
                s.append(submit)
                e.append(end)
                t.append(wall - end)
        rows[build] = {k: [statistics.median(v) for v in p] for k, p in parts.items()}
    keys = sorted({k for r in rows.values() for k in r}, key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else 99, k[1]))
    print("medians, µs: submit | last window's end | tail (wall − end), per build")
    print(f"{'shape':<6}{'iters':>6} | " + " | ".join(f"{b:>24}" for b in rows))
    for k in keys:
        cells = []
        for b in rows:
            v = rows[b].get(k)
            cells.append(f"{v[0]:>7.0f} {v[1]:>7.0f} {v[2]:>8.0f}" if v else f"{'-':>24}")
        print(f"{k[0]:<6}{k[1]:>6} | " + " | ".join(cells))
    for b in rows:
        tails = [v[2] for v in rows[b].values()]
        print(f"{b}: tail median over rows {statistics.median(tails):.0f} µs (rows {min(tails):.0f} .. {max(tails):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
