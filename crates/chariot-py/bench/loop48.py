#!/usr/bin/env python3
"""The balanced N x 16 MiB shift loop three ways on one GPU: chariot from Python with
no tuning, the hand-written CuPy stream pipeline at its best stream count, and
chariot's Rust demo; plus the host cost per task of a Python loop of small tasks.
Writes loop.csv and host-cost.csv to --out.

The kernel is the demo's (crates/chariot-studies/kernels/shift.cu) with the demo's
rounds per element (read from the demo's CSV, calibrated there so that the kernel
takes as long as a copy), so the three run the same loop. Every output is checked
against CuPy's. Two phases: a sweep, --sweep-rounds rounds that each run every way
once (the serial loop, CuPy at each stream count, chariot-py) in an order rotated
round by round, whose medians pick CuPy's best stream count; then the head-to-head,
--rounds rounds of CuPy at that count and chariot-py strictly alternated, so that each
run follows one of the other. The head-to-head's medians are the comparison. CuPy and
chariot-py are timed by the wall clock from the first submit to the end of the wait;
the Rust demo writes only its report's makespan (first command to last), so
chariot-py's report makespan is written beside it. Speedups are over the sweep's
serial loop (CuPy on one stream, one chunk at a time: download, kernel, readback, wait).
"""
import argparse
import csv
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import gpu_chariot as gc

HERE = os.path.dirname(os.path.abspath(__file__))
SHIFT = open(os.path.join(HERE, "..", "..", "chariot-studies", "kernels", "shift.cu")).read()
BLOCK = 256


def rust_demo(demo, chunks, chunk_mib, iters):
    """One run of the Rust demo: (its default run's makespan ms, its serial ms, iters)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [demo, "--backend", "cuda", "--chunks", str(chunks), "--chunk-mib", str(chunk_mib), "--out", out]
        if iters is not None:
            cmd += ["--iters", str(iters)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        rows = list(csv.DictReader(open(os.path.join(out, "demo.csv"))))
    row = next(r for r in rows if r["config"] == "default")
    return float(row["makespan_ms"]), float(row["serial_ms"]), int(row["iters"])


class CupyLoop:
    """The hand-written stream pipeline: chunk i on stream i mod S, each stream with its
    own device buffers; download, kernel and readback async from and to pinned memory."""

    def __init__(self, cp, inp, n, chunks, iters):
        self.cp, self.n, self.chunks, self.iters = cp, n, chunks, iters
        self.kernel = cp.RawModule(code=SHIFT).get_function("shift")
        nbytes = n * chunks * 4
        self.h_in = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint32, n * chunks)
        self.h_out = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint32, n * chunks)
        self.h_in[:] = inp

    def run(self, streams, serial=False):
        cp, n = self.cp, self.n
        ss = [cp.cuda.Stream(non_blocking=True) for _ in range(streams)]
        d_in = [cp.empty(n, cp.uint32) for _ in ss]
        d_out = [cp.empty(n, cp.uint32) for _ in ss]
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for i in range(self.chunks):
            s = i % streams
            a, b = i * n, (i + 1) * n
            d_in[s].set(self.h_in[a:b], stream=ss[s])
            self.kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (d_out[s], d_in[s], np.uint32(n), np.uint32(self.iters)), stream=ss[s])
            # blocking=False: CuPy's get waits for its stream by default, which would
            # serialise the pipeline.
            d_out[s].get(stream=ss[s], out=self.h_out[a:b], blocking=False)
            if serial:
                ss[s].synchronize()
        for st in ss:
            st.synchronize()
        return (time.perf_counter() - t0) * 1e3


class ChariotLoop:
    """The same loop through gpu_chariot, every setting the runtime's default."""

    def __init__(self, inp, n, chunks, iters, **options):
        self.s = gc.Scheduler(backend="cuda", **options)
        self.n, self.chunks, self.iters = n, chunks, iters
        self.makespans = []  # the report's, first command to last: as the Rust demo's
        self.reports = []  # each run's records and adaptations, for --timelines
        self.inp = self.s.alloc_host(n * chunks, "uint32")
        self.out = self.s.alloc_host(n * chunks, "uint32")
        np.asarray(self.inp)[:] = inp
        self.d_in, self.d_out = self.s.alloc(n, "uint32"), self.s.alloc(n, "uint32")
        self.k = self.s.register_kernel(gc.Kernel("shift", SHIFT, ["unsigned*", "const unsigned*", "unsigned", "unsigned"]))

    def submit(self):
        """Submits the loop's tasks; perf_counter() after the first one's submit."""
        n, grid = self.n, (self.n + BLOCK - 1) // BLOCK
        first = None
        for i in range(self.chunks):
            r = (i * n, (i + 1) * n)
            (self.s.task(i, n).download(self.d_in, 0, self.inp, r)
                .launch(self.k, grid, BLOCK, [self.d_out, self.d_in, n, self.iters])
                .readback(self.out, r, self.d_out).submit())
            if first is None:
                first = time.perf_counter()
        return first

    def run(self):
        t0 = time.perf_counter()
        self.submit()
        report = self.s.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
        self.makespans.append(report.makespan_ms)
        d = report.to_dict()
        self.reports.append({k: d[k] for k in ("records", "adaptations", "tuning", "start_ns", "end_ns") if k in d})
        return wall


def host_cost(tasks):
    """Python's cost per task: submit of `tasks` one-launch tasks of an empty kernel,
    and the whole run to synchronize, per task."""
    s = gc.Scheduler(backend="cuda")
    k = s.register_kernel(gc.Kernel("empty", SHIFT, []))
    rows = []
    for rep in range(3):
        t0 = time.perf_counter()
        for i in range(tasks):
            s.task(i).launch(k, 1, 32, []).submit()
        t1 = time.perf_counter()
        s.synchronize()
        t2 = time.perf_counter()
        rows.append({"rep": rep, "tasks": tasks, "submit_us_per_task": (t1 - t0) * 1e6 / tasks,
                     "run_us_per_task": (t2 - t0) * 1e6 / tasks})
    s.shutdown()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=int, default=48)
    p.add_argument("--chunk-mib", type=float, default=16)
    p.add_argument("--sweep-rounds", type=int, default=9,
                   help="rounds of the sweep; each runs every way once (serial, each CuPy stream count, chariot-py), "
                        "order rotated")
    p.add_argument("--rounds", type=int, default=21,
                   help="rounds of the head-to-head: CuPy at its best stream count and chariot-py alternated")
    p.add_argument("--demo-runs", type=int, default=3, help="runs of the Rust demo (a process each), after the rounds")
    p.add_argument("--demo", default=".gpu/chariot-demo")
    p.add_argument("--streams", default="2,3,4,6,8", help="CuPy stream counts tried")
    p.add_argument("--variants", action="store_true",
                   help="also chariot-py with the online adaptation off and with dispatchers unpinned (diagnostics)")
    p.add_argument("--timelines", help="write every chariot-py run's report (records, adaptations) to this .json.gz")
    p.add_argument("--tasks", type=int, default=20000, help="tasks of the host-cost loop")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    import cupy as cp

    os.makedirs(a.out, exist_ok=True)
    n = int(a.chunk_mib * (1 << 20)) // 4
    have_demo = os.access(a.demo, os.X_OK)
    if have_demo:
        _, _, iters = rust_demo(a.demo, a.chunks, a.chunk_mib, None)
    else:
        iters = 300
        print(f"loop48: no {a.demo}; iters {iters} without the demo's calibration", file=sys.stderr)
    rng = np.random.default_rng(2013)
    inp = rng.integers(0, 2**32, n * a.chunks, dtype=np.uint32)
    cup = CupyLoop(cp, inp, n, a.chunks, iters)
    chariots = {"chariot-py": ChariotLoop(inp, n, a.chunks, iters)}
    if a.variants:
        chariots["chariot-py-no-adapt"] = ChariotLoop(inp, n, a.chunks, iters, adapt=False)
        chariots["chariot-py-unpinned"] = ChariotLoop(inp, n, a.chunks, iters, pin_dispatchers=False)
    counts = [int(S) for S in a.streams.split(",")]
    ways = {"serial (cupy, 1 stream, wait per chunk)": lambda: cup.run(1, serial=True)}
    ways.update({f"cupy-streams-{S}": (lambda S=S: cup.run(S)) for S in counts})
    ways.update({name: c.run for name, c in chariots.items()})
    # Warm-up: every way once.
    for run in ways.values():
        run()
    # The sweep: every way in every round, the order rotated round by round, so that
    # each meets the machine's drifts alike; it picks CuPy's best stream count.
    sweep = {w: [] for w in ways}
    names = list(ways)
    for r in range(a.sweep_rounds):
        for w in names[r % len(names):] + names[:r % len(names)]:
            sweep[w].append(ways[w]())
    swept = {w: statistics.median(ts) for w, ts in sweep.items()}
    best_s = min(counts, key=lambda S: swept[f"cupy-streams-{S}"])
    # The head-to-head: CuPy at that count and chariot-py strictly alternated, so that
    # each run follows a run of the other (in the sweep, a CuPy run mostly follows
    # another CuPy run, whose code and driver paths are then warm).
    for c in chariots.values():
        c.makespans.clear(), c.reports.clear()
    h2h_cupy = "cupy-best-head-to-head"
    times = {h2h_cupy: [], **{name: [] for name in chariots}}
    for r in range(a.rounds):
        for name, c in chariots.items():
            times[h2h_cupy].append(cup.run(best_s))
            times[name].append(c.run())
        print(f"round {r}: " + " ".join(f"{w} {ts[-1]:.3f}" for w, ts in times.items()), flush=True)
    reference = cup.h_out.copy()  # the last CuPy run's output
    demo = [rust_demo(a.demo, a.chunks, a.chunk_mib, iters)[0] for _ in range(a.demo_runs)] if have_demo else []
    med = {w: statistics.median(ts) for w, ts in times.items()}
    serial = swept["serial (cupy, 1 stream, wait per chunk)"]
    wrong = {name: int((np.asarray(c.out) != reference).sum()) for name, c in chariots.items()}
    rows = []
    for w, ts in sweep.items():
        rows.append({"way": w if w.startswith(("serial", "cupy")) else f"{w} (sweep)",
                     "streams": 1 if w.startswith("serial") else (w.rsplit("-", 1)[1] if w.startswith("cupy") else ""),
                     "median_ms": round(swept[w], 3), "runs_ms": " ".join(f"{t:.3f}" for t in ts), "rounds": a.sweep_rounds})
    for w, ts in times.items():
        rows.append({"way": w, "streams": best_s if w == h2h_cupy else "", "median_ms": round(med[w], 3),
                     "runs_ms": " ".join(f"{t:.3f}" for t in ts), "wrong_elements": wrong.get(w, ""), "rounds": a.rounds})
    for name, c in chariots.items():
        rows.append({"way": f"{name}-report-makespan", "streams": "", "median_ms": round(statistics.median(c.makespans), 3),
                     "runs_ms": " ".join(f"{t:.3f}" for t in c.makespans), "rounds": a.rounds})
    if demo:
        rows.append({"way": "chariot-rust-report-makespan", "streams": "", "median_ms": round(statistics.median(demo), 3),
                     "runs_ms": " ".join(f"{t:.3f}" for t in demo), "rounds": ""})
    for r in rows:
        r["speedup_over_serial"] = round(serial / r["median_ms"], 3)
        r.update(chunks=a.chunks, chunk_mib=a.chunk_mib, iters=iters)
    fields = ["way", "streams", "median_ms", "speedup_over_serial", "runs_ms", "chunks", "chunk_mib", "iters", "rounds",
              "wrong_elements"]
    with open(os.path.join(a.out, "loop.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    if a.timelines:
        with gzip.open(a.timelines, "wt") as f:
            json.dump({name: {"walls_ms": times[name], "reports": c.reports} for name, c in chariots.items()}, f)
    hc = host_cost(a.tasks)
    with open(os.path.join(a.out, "host-cost.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(hc[0]))
        w.writeheader()
        w.writerows(hc)
    for r in rows:
        print(f"{r['way']:>40}: {r['median_ms']:9.3f} ms  {r['speedup_over_serial']:.2f}x")
    for name, bad in wrong.items():
        print(f"{name} wrong elements against CuPy: {bad}")
    for r in hc:
        print(f"host cost: {r['submit_us_per_task']:.2f} us/task to submit, {r['run_us_per_task']:.2f} us/task to the end")
    py, cb = med["chariot-py"], med[h2h_cupy]
    print(f"chariot-py speedup {serial / py:.2f}x (wall, submit to synchronize); CuPy at its best stream count "
          f"({best_s}) {serial / cb:.2f}x; chariot-py over CuPy's best {cb / py:.3f} ({a.rounds} rounds alternated)")
    if demo:
        pm, rm = statistics.median(chariots["chariot-py"].makespans), statistics.median(demo)
        print(f"report makespans: chariot-py / chariot-rust = {pm / rm:.3f} (goal <= 1.03)")


if __name__ == "__main__":
    main()
