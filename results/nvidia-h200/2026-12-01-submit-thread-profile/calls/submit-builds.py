#!/usr/bin/env python3
"""The submit probe's table over several builds: per shape, each build's median over
its processes of each process's median submit time a task and wall a batch, each over
the first build's, and their geometric means. Usage: submit-builds.py DIR B0 B1 ...
(DIR/submit-B.txt each)."""
import collections, math, os, re, statistics as st, sys

def load(f):
    d = collections.defaultdict(list)
    for l in open(f):
        m = re.match(r"cuda (\w+) auto (\d+) nodes.*submit µs a task median ([\d.]+) min ([\d.]+); wall µs median (\d+) min (\d+)", l)
        if m:
            d[m.group(1)].append((float(m.group(3)), int(m.group(5))))
    return d

d, builds = sys.argv[1], sys.argv[2:]
data = {b: load(os.path.join(d, f"submit-{b}.txt")) for b in builds}
base = builds[0]
print("shape | processes | submit µs a task per build (over " + base + ") | wall a batch µs per build (over " + base + ")")
logs = {b: ([], []) for b in builds[1:]}
for s in ["lc", "ep", "dc", "mr", "dag", "rnd"]:
    sub = {b: st.median(x for x, _ in data[b][s]) for b in builds}
    wall = {b: st.median(y for _, y in data[b][s]) for b in builds}
    for b in builds[1:]:
        logs[b][0].append(math.log(sub[b] / sub[base])); logs[b][1].append(math.log(wall[b] / wall[base]))
    n = ",".join(str(len(data[b][s])) for b in builds)
    print(f"{s:4} | {n} | " + " ".join(f"{b} {sub[b]:.3f}" + ("" if b == base else f" ({sub[b]/sub[base]:.3f})") for b in builds)
          + " | " + " ".join(f"{b} {wall[b]:.0f}" + ("" if b == base else f" ({wall[b]/wall[base]:.3f})") for b in builds))
for b in builds[1:]:
    print(f"geometric mean {b}/{base}: submit {math.exp(sum(logs[b][0])/6):.3f}, wall {math.exp(sum(logs[b][1])/6):.3f}")
