#!/usr/bin/env python3
"""Call D's table: per flow row, the median wall of each lane cap's chariot processes
(medians of their timed rounds), over the median of every hand-written-graph process,
and the median of its processes' medians of the windows' host time a batch. Usage: lanes-table.py DIR (the
unpacked logs.tar.xz)."""
import collections
import csv
import glob
import statistics
import sys

d = sys.argv[1]
med = collections.defaultdict(lambda: collections.defaultdict(list))
setup = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(f'{d}/flow-*.csv'):
    v = f.split('/')[-1].split('-')[1]
    var = 'graph' if 'graph' in f else 'chariot'
    walls, hosts = collections.defaultdict(list), collections.defaultdict(list)
    for r in csv.DictReader(open(f)):
        if r['round'] == '0':
            continue
        k = (r['shape'], int(r['iters']))
        walls[k].append(int(r['wall_ns']))
        hosts[k].append(int(r['window_host_ns']))
    for k, x in walls.items():
        med[(v, var)][k].append(statistics.median(x))
    for k, x in hosts.items():
        if var == 'chariot':
            setup[v][k].append(statistics.median(x))
caps = ('w128', 'w64', 'w32')
print('shape iters | chariot µs and over the graph, up to 128 | 64 | 32 lanes | windows host µs 128 64 32')
for k in sorted(med[('w128', 'chariot')]):
    g = statistics.median([x for v in caps for x in med[(v, 'graph')][k]])
    row = []
    for v in caps:
        c = statistics.median(med[(v, 'chariot')][k])
        row.append(f'{c / 1e3:7.0f} {c / g:5.2f}')
    su = ' '.join(f'{statistics.median(setup[v][k]) / 1e3:5.0f}' for v in caps)
    print(f'{k[0]:4} {k[1]:6} | ' + ' | '.join(row) + ' | ' + su)
