#!/usr/bin/env python3
"""Per task, the time each function took on the submitting thread and on the
dispatcher, from `perf report -n --no-children --sort comm,sym` of two builds' runs of
the submit probe (cpu-clock at 20 kHz: 50 µs a sample). Usage: perf-per-task.py TASKS
OLD.txt NEW.txt [N] (TASKS: batches × nodes; N: rows, 30)."""
import re, sys

def load(f):
    d = {}
    for l in open(f):
        m = re.match(r"\s*([\d.]+)%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(.*)", l)
        if m:
            comm = "submit" if m.group(3).startswith("submit_probe") else ("dispatcher" if m.group(3).startswith("chariot-dispatc") else "other")
            key = (comm, m.group(5).strip())
            d[key] = d.get(key, 0) + int(m.group(2))
    return d

tasks, a, b = int(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
rows = int(sys.argv[4]) if len(sys.argv) > 4 else 30
ns = lambda n: n * 50000 / tasks
for comm in ("submit", "dispatcher"):
    ta = sum(v for k, v in a.items() if k[0] == comm); tb = sum(v for k, v in b.items() if k[0] == comm)
    print(f"== {comm} thread, ns a task on CPU (waiting included): old {ns(ta):.0f}, new {ns(tb):.0f}")
    keys = sorted({k for k in list(a) + list(b) if k[0] == comm}, key=lambda k: -(a.get(k, 0) + b.get(k, 0)))
    for k in keys[:rows]:
        print(f"{ns(a.get(k, 0)):7.1f} {ns(b.get(k, 0)):7.1f}  {k[1][:110]}")
