#!/usr/bin/env python3
"""Pools bench/loop48.py's runs over several calls or passes: each way's median over
every run of the given output folders and chariot-py's ratio to CuPy at its best
stream count (the head-to-head's runs; in folders from before that phase, the stream
count with the lowest pooled median); with --timelines (loop48.py's --timelines files), where
each chariot-py run's makespan went: the copy engines' busy sums, the readback engine's
idle time, and the tail after the last download."""
import argparse
import csv
import gzip
import json
import os
import statistics

SERIAL = "serial (cupy, 1 stream, wait per chunk)"
H2H = "cupy-best-head-to-head"


def pool(folders):
    """Every run of every way in `folders`' loop.csv files: {way: [ms, ...]}."""
    runs = {}
    for d in folders:
        for r in csv.DictReader(open(os.path.join(d, "loop.csv"))):
            if r["runs_ms"]:
                runs.setdefault(r["way"], []).extend(float(t) for t in r["runs_ms"].split())
    return runs


def engines(report):
    """One run's copy engines: (makespan, download busy, readback busy, readback idle,
    tail after the last download), ms."""
    recs = report["records"]
    start, end = min(r["start_ns"] for r in recs), max(r["end_ns"] for r in recs)
    dl = sorted((r for r in recs if r["stage"] == "Download"), key=lambda r: r["start_ns"])
    rb = sorted((r for r in recs if r["stage"] == "Readback"), key=lambda r: r["start_ns"])
    busy = lambda rs: sum(r["end_ns"] - r["start_ns"] for r in rs)  # noqa: E731
    idle = sum(max(0, b["start_ns"] - a["end_ns"]) for a, b in zip(rb, rb[1:]))
    return [x / 1e6 for x in (end - start, busy(dl), busy(rb), idle, end - dl[-1]["end_ns"])]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", help="loop48.py --out folders")
    p.add_argument("--timelines", nargs="*", default=[], help="loop48.py --timelines files")
    a = p.parse_args()
    runs = pool(a.folders)
    med = {w: statistics.median(ts) for w, ts in runs.items()}
    serial = med[SERIAL]
    for w, m in med.items():
        print(f"{w:>40}: {m:9.3f} ms  {serial / m:.3f}x  ({len(runs[w])} runs)")
    if H2H in med:
        print(f"chariot-py over CuPy at its best stream count, head to head (pooled): {med[H2H] / med['chariot-py']:.4f}")
    else:  # folders written before the head-to-head phase: the rotated rounds only
        cupy = {w: m for w, m in med.items() if w.startswith("cupy-streams-")}
        best = min(cupy, key=cupy.get)
        print(f"chariot-py over CuPy's best ({best}, pooled): {cupy[best] / med['chariot-py']:.4f}")
    if "chariot-rust-report-makespan" in med:
        print(f"report makespans, chariot-py over the Rust demo (pooled): "
              f"{med['chariot-py-report-makespan'] / med['chariot-rust-report-makespan']:.4f}")
    rows = []
    for f in a.timelines:
        with gzip.open(f, "rt") as fh:
            rows += [engines(r) for r in json.load(fh)["chariot-py"]["reports"]]
    if rows:
        names = ["makespan", "download busy", "readback busy", "readback idle", "tail after last download"]
        print(f"chariot-py's copy engines over {len(rows)} runs (ms; median, min, max):")
        for i, n in enumerate(names):
            col = [r[i] for r in rows]
            print(f"  {n:>26}: {statistics.median(col):7.3f} {min(col):7.3f} {max(col):7.3f}")
        over = [r[0] - max(r[1], r[2]) for r in rows]
        print(f"  makespan beyond the busier copy engine: {statistics.median(over):.3f} ms median "
              f"(min {min(over):.3f}, max {max(over):.3f})")


if __name__ == "__main__":
    main()
