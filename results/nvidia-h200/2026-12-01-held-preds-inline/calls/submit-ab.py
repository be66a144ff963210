#!/usr/bin/env python3
"""Call I's submit table: each build's median over its processes of each process's
median batch (submit time a task, wall a batch), new over old, geometric means.
Usage: submit-ab.py DIR (with submit-old.txt, submit-new.txt)."""
import math, os, re, statistics as st, sys

def load(path):
    d = {}
    for line in open(path):
        m = re.match(r"cuda (\w+) auto (\d+) nodes, 0 iterations: submit µs a task median ([\d.]+) min ([\d.]+); "
                     r"wall µs median (\d+) min (\d+)", line)
        if m:
            d.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(5))))
    return d
old, new = (load(os.path.join(sys.argv[1], f"submit-{b}.txt")) for b in ("old", "new"))
gs, gw = [], []
print("shape | old submit us a task (processes) | new | new/old | old wall us | new wall us | new/old")
for s in ["lc", "ep", "dc", "mr", "dag", "rnd"]:
    os_, ns = st.median(x[0] for x in old[s]), st.median(x[0] for x in new[s])
    ow, nw = st.median(x[1] for x in old[s]), st.median(x[1] for x in new[s])
    gs.append(ns / os_); gw.append(nw / ow)
    print(f"{s} | {os_:.3f} ({' '.join('%.3f' % x[0] for x in old[s])}) | {ns:.3f} "
          f"({' '.join('%.3f' % x[0] for x in new[s])}) | {ns/os_:.3f} | {ow:.0f} | {nw:.0f} | {nw/ow:.3f}")
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"geometric mean: submit {g(gs):.3f}, wall {g(gw):.3f}")
