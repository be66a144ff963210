#!/usr/bin/env python3
"""The submit probe's table: per shape, each build's median over its processes of each
process's median submit time a task and wall a batch, new over old, and their
geometric means. Usage: submit-ab.py DIR (submit-old.txt, submit-new.txt)."""
import collections, math, os, re, statistics as st, sys

def load(f):
    d = collections.defaultdict(list)
    for l in open(f):
        m = re.match(r"cuda (\w+) auto (\d+) nodes.*submit µs a task median ([\d.]+) min ([\d.]+); wall µs median (\d+) min (\d+)", l)
        if m:
            d[m.group(1)].append((float(m.group(3)), int(m.group(5))))
    return d

d = sys.argv[1]
o, n = load(os.path.join(d, "submit-old.txt")), load(os.path.join(d, "submit-new.txt"))
ls, lw = [], []
print("shape | processes old, new | submit µs a task old -> new (new/old) | wall a batch µs old -> new (new/old)")
for s in ["lc", "ep", "dc", "mr", "dag", "rnd"]:
    so, sn = st.median(x for x, _ in o[s]), st.median(x for x, _ in n[s])
    wo, wn = st.median(y for _, y in o[s]), st.median(y for _, y in n[s])
    ls.append(math.log(sn / so)); lw.append(math.log(wn / wo))
    print(f"{s:4} | {len(o[s])}, {len(n[s])} | {so:.3f} -> {sn:.3f} ({sn/so:.3f}) | {wo:.0f} -> {wn:.0f} ({wn/wo:.3f})")
print(f"geometric mean new/old: submit {math.exp(sum(ls)/len(ls)):.3f}, wall {math.exp(sum(lw)/len(lw)):.3f}")
