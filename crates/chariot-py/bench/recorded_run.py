#!/usr/bin/env python3
"""Host cost of small tasks from Python: the same loop of N tiny tasks (a 1 KiB
download, a one-block kernel, a 1 KiB readback) submitted task by task, and recorded
once as a RecordedGraph then run; alternated, medians of --repeat.

Printed per way:
- the Python loop's submit time per task (first submit to last, µs), and its wall time
  (first submit to the end of `synchronize`, ms);
- the recorded graph's `run()` call (µs: the host's cost of a run, whatever N), and its
  wall time (`run()` to the end of `synchronize`, ms).
Every run's output is checked element by element against NumPy.
"""
import argparse
import statistics
import time

import numpy as np

import gpu_chariot as gc

ADD = r'''extern "C" __global__ void add(int* x, unsigned n, int a) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += a; }'''


def add_twin(x, n, a):
    x[:n] += a


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=1024, help="tasks N in the loop (default 1024)")
    p.add_argument("--elements", type=int, default=256, help="int32 elements a task copies (default 256)")
    p.add_argument("--repeat", type=int, default=7, help="timed runs of each way (default 7)")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "sim"])
    a = p.parse_args()
    if a.tasks < 1 or a.elements < 1 or a.repeat < 1:
        p.error("--tasks, --elements and --repeat must be at least 1")
    n, m = a.tasks, a.elements
    s = gc.Scheduler(backend=a.backend)
    src, dst = s.alloc_host(n * m, "int32"), s.alloc_host(n * m, "int32")
    np.asarray(src)[:] = np.arange(n * m)
    d = s.alloc(m, "int32")
    k = s.register_kernel(gc.Kernel("add", ADD, ["int*", "unsigned", "int"], twin=add_twin))
    want = np.arange(n * m) + 5

    def submit_all(sched):
        for i in range(n):
            r = slice(i * m, (i + 1) * m)
            sched.task(i, m).download(d, 0, src, r).launch(k, (m + 255) // 256, 256, [d, m, 5]).readback(dst, r, d).submit()

    def check(way):
        got = np.asarray(dst)
        if not np.array_equal(got, want):
            bad = int(np.argmax(got != want))
            raise SystemExit(f"{way}: element {bad} is {got[bad]}, expected {want[bad]}")
        got[:] = -1

    g = s.record(submit_all)
    for _ in range(9):  # the first runs build the graph and try the device executor (4 runs each way)
        g.run()
        s.synchronize()
    check("recorded graph, warm-up")
    loop_submit, loop_wall, run_call, run_wall = [], [], [], []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        submit_all(s)
        t1 = time.perf_counter()
        s.synchronize()
        t2 = time.perf_counter()
        check("loop")
        loop_submit.append((t1 - t0) / n * 1e6)
        loop_wall.append((t2 - t0) * 1e3)
        t0 = time.perf_counter()
        g.run()
        t1 = time.perf_counter()
        s.synchronize()
        t2 = time.perf_counter()
        check("recorded graph")
        run_call.append((t1 - t0) * 1e6)
        run_wall.append((t2 - t0) * 1e3)
    med = statistics.median
    print(f"backend {s.backend}, {n} tasks of {m} int32, {a.repeat} runs each, alternated (medians)")
    print(f"python loop: submit {med(loop_submit):.2f} us/task, wall {med(loop_wall):.3f} ms")
    print(f"recorded graph: run() call {med(run_call):.1f} us, wall {med(run_wall):.3f} ms")
    print(f"recorded over loop, wall: {med(run_wall) / med(loop_wall):.3f}")
    s.shutdown()


if __name__ == "__main__":
    main()
