#!/usr/bin/env python3
"""Where chariot-py's wall time beyond the report's makespan goes, on the balanced
48 x 16 MiB loop of bench/loop48.py: per run, the wall time from the first submit to
synchronize's return, the report's makespan (first command to last), and the cost of
synchronize alone when called after the batch has ended (the same loop submitted,
then a sleep past its end). Medians of --runs; one CSV row a run to --csv."""
import argparse
import csv
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop48  # noqa: E402  (the same loop, kernel and scheduler)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--iters", type=int, default=441, help="kernel rounds per element (the demo's calibration on an H200)")
    p.add_argument("--csv")
    a = p.parse_args()
    n, chunks = (16 << 20) // 4, 48
    inp = np.random.default_rng(1).integers(0, 2**32, n * chunks, dtype=np.uint32)
    c = loop48.ChariotLoop(inp, n, chunks, a.iters)
    c.run(), c.run()  # warm-up

    submit = c.submit

    # The report's times count from the scheduler's epoch; a CPU callback's record
    # start and the callback's own perf_counter give the offset (within microseconds).
    seen = []
    c.s.task(0).callback(lambda info: seen.append(time.perf_counter())).submit()
    cpu = [r for r in c.s.synchronize().to_dict()["records"] if r["stage"] == "Cpu"]
    epoch = seen[0] - cpu[0]["start_ns"] / 1e9 if cpu and seen else None
    rows = []
    for run in range(a.runs):
        t0 = time.perf_counter()
        t_first = submit()
        t_sync = time.perf_counter()
        report = c.s.synchronize()
        t_end = time.perf_counter()
        wall = (t_end - t0) * 1e3
        recs = report.to_dict()["records"]
        split = {}
        if epoch is not None:
            at = lambda ns: (epoch + ns / 1e9)  # noqa: E731
            first = min(recs, key=lambda r: r["start_ns"])
            split = {"to_first_command_ms": round((at(first["start_ns"]) - t0) * 1e3, 3),
                     "first_submit_ms": round((t_first - t0) * 1e3, 3),
                     "submits_ms": round((t_sync - t0) * 1e3, 3),
                     "after_last_command_ms": round((t_end - at(max(r["end_ns"] for r in recs))) * 1e3, 3)}
        # Back to back: the next batch submitted as soon as this one is synchronized,
        # while the dispatchers still spin (they sleep after a while idle).
        submit()
        c.s.synchronize()
        t2 = time.perf_counter()
        submit()
        recs2 = c.s.synchronize().to_dict()["records"]
        if epoch is not None:
            split["to_first_command_back_to_back_ms"] = round(
                (epoch + min(r["start_ns"] for r in recs2) / 1e9 - t2) * 1e3, 3)
        submit()
        time.sleep(0.06)  # past the batch's end (about 17 ms)
        t1 = time.perf_counter()
        c.s.synchronize()
        alone = (time.perf_counter() - t1) * 1e3
        rows.append({"run": run, "wall_ms": round(wall, 3), "makespan_ms": round(report.makespan_ms, 3),
                     "beyond_makespan_ms": round(wall - report.makespan_ms, 3), **split,
                     "synchronize_after_end_ms": round(alone, 3)})
        print(" ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "run"}
    print("medians: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    c.s.shutdown()


if __name__ == "__main__":
    main()
