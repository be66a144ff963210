#!/usr/bin/env python3
"""Submit cost, old against new: each process's median over its 200 batches (µs a task),
then per shape the median over the turns, and the ratio of the per-turn pairs.
Usage: submit-ab.py [--pair OLD NEW] submit.txt [more ...] (default labels old, new).
Standard library only."""
import re, statistics, collections, sys, math
args = sys.argv[1:]
old, new = "old", "new"
if args[:1] == ["--pair"]:
    old, new, args = args[1], args[2], args[3:]
d = collections.defaultdict(list)
for path in args:
    for l in open(path):
        m = re.match(r'(\w+) cuda (\w+) \w+ \d+: submit µs/task median ([\d.]+) min ([\d.]+); submit cpu µs/task median ([\d.]+) min ([\d.]+); wall µs median (\d+)', l)
        if m:
            d[(m[2], m[1])].append((float(m[3]), int(m[7])))
print("submit µs a task (median of each process's 200 batches), median over processes; wall µs a batch")
print(f"{'shape':5} | {old:>6} {new:>6} {new + '/' + old:>7} | wall {old:>6} {new:>6} {new + '/' + old:>7} | processes")
rs, ws = [], []
for s in ['lc', 'ep', 'rnd', 'dag', 'mr']:
    o, n = d[(s, old)], d[(s, new)]
    if not o or not n:
        continue
    mo, mn = statistics.median(x[0] for x in o), statistics.median(x[0] for x in n)
    wo, wn = statistics.median(x[1] for x in o), statistics.median(x[1] for x in n)
    rs.append(mn / mo); ws.append(wn / wo)
    print(f"{s:5} | {mo:6.3f} {mn:6.3f} {mn/mo:7.3f} | wall {wo:6.0f} {wn:6.0f} {wn/wo:7.3f} | {len(o)} + {len(n)}")
g = lambda v: math.exp(statistics.mean(map(math.log, v)))
print(f"geometric mean {new}/{old}: submit {g(rs):.3f}, wall {g(ws):.3f}")
