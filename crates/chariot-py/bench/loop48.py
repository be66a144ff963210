#!/usr/bin/env python3
"""The balanced N x 16 MiB shift loop three ways on one GPU: chariot from Python with
no tuning, the hand-written CuPy stream pipeline at its best stream count, and
chariot's Rust demo; alternated, medians of --repeat; plus the host cost per task of
a Python loop of small tasks. Writes loop.csv and host-cost.csv to --out.

The kernel is the demo's (crates/chariot-studies/kernels/shift.cu) with the demo's
rounds per element (read from the demo's CSV, calibrated there so that the kernel
takes as long as a copy), so the three run the same loop. Every output is checked
against CuPy's. CuPy and chariot-py are timed by the wall clock from the first
submit to the end of the wait; the Rust demo writes only its report's makespan (first
command to last), so chariot-py's report makespan is written beside it. Speedups are over the serial loop (CuPy on one stream, one chunk at a
time: download, kernel, readback, wait).
"""
import argparse
import csv
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

    def __init__(self, inp, n, chunks, iters):
        self.s = gc.Scheduler(backend="cuda")
        self.n, self.chunks, self.iters = n, chunks, iters
        self.makespans = []  # the report's, first command to last: as the Rust demo's
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
        self.makespans.append(report.makespan_ms)
        return (time.perf_counter() - t0) * 1e3


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
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--demo", default=".gpu/chariot-demo")
    p.add_argument("--streams", default="1,2,3,4,6,8", help="CuPy stream counts tried")
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
    cha = ChariotLoop(inp, n, a.chunks, iters)
    # Warm-up, the serial baseline, and CuPy's best stream count.
    cup.run(1), cha.run()
    serial = statistics.median(cup.run(1, serial=True) for _ in range(a.repeat))
    by_s = {S: statistics.median(cup.run(S) for _ in range(a.repeat)) for S in map(int, a.streams.split(","))}
    best_s = min(by_s, key=by_s.get)
    reference = cup.h_out.copy()
    times = {"cupy": [], "chariot-py": [], "chariot-py-report-makespan": [], "chariot-rust-report-makespan": []}
    cha.makespans.clear()
    for _ in range(a.repeat):
        times["cupy"].append(cup.run(best_s))
        times["chariot-py"].append(cha.run())
        if have_demo:
            times["chariot-rust-report-makespan"].append(rust_demo(a.demo, a.chunks, a.chunk_mib, iters)[0])
    times["chariot-py-report-makespan"] = cha.makespans[-a.repeat:]
    wrong = int((np.asarray(cha.out) != reference).sum())
    rows = [{"way": f"cupy-streams-{S}", "streams": S, "median_ms": round(t, 3)} for S, t in by_s.items()]
    rows.insert(0, {"way": "serial (cupy, 1 stream, wait per chunk)", "streams": 1, "median_ms": round(serial, 3)})
    for way, ts in times.items():
        if ts:
            rows.append({"way": way, "streams": best_s if way == "cupy" else "", "median_ms": round(statistics.median(ts), 3),
                         "runs_ms": " ".join(f"{t:.3f}" for t in ts)})
    for r in rows:
        r["speedup_over_serial"] = round(serial / r["median_ms"], 3)
        r.update(chunks=a.chunks, chunk_mib=a.chunk_mib, iters=iters, wrong_elements=wrong if r["way"] == "chariot-py" else "")
    fields = ["way", "streams", "median_ms", "speedup_over_serial", "runs_ms", "chunks", "chunk_mib", "iters", "wrong_elements"]
    with open(os.path.join(a.out, "loop.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    hc = host_cost(a.tasks)
    with open(os.path.join(a.out, "host-cost.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(hc[0]))
        w.writeheader()
        w.writerows(hc)
    for r in rows:
        print(f"{r['way']:>40}: {r['median_ms']:9.3f} ms  {r['speedup_over_serial']:.2f}x")
    print(f"chariot-py wrong elements against CuPy: {wrong}")
    for r in hc:
        print(f"host cost: {r['submit_us_per_task']:.2f} us/task to submit, {r['run_us_per_task']:.2f} us/task to the end")
    py = statistics.median(times["chariot-py"])
    print(f"chariot-py speedup {serial / py:.2f}x (wall, submit to synchronize); CuPy best ({best_s} streams) "
          f"{serial / by_s[best_s]:.2f}x")
    if times["chariot-rust-report-makespan"]:
        pm, rm = statistics.median(times["chariot-py-report-makespan"]), statistics.median(times["chariot-rust-report-makespan"])
        print(f"report makespans: chariot-py / chariot-rust = {pm / rm:.3f} (goal <= 1.03)")
    cha.s.shutdown()
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
