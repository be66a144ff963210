#!/usr/bin/env python3
"""Call P's table: per shape and iteration count, the median wall (ms) of rounds 1-9 of both
processes of each build, over the hand-written graph of the same build, the most lanes a
window took (median over rounds), and new over old. Usage: by-iters.py DIR (the CSVs)."""
import csv, glob, statistics as st, collections, sys
d = collections.defaultdict(list); lanes = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + '/flow-*.csv'):
    b = 'old' if '-old-' in f else 'new'
    for r in csv.DictReader(open(f)):
        if r['round'] == '0':
            continue
        d[(r['shape'], r['iters'], b, r['variant'])].append(int(r['wall_ns']) / 1e6)
        if r['variant'] == 'chariot':
            lanes[(r['shape'], r['iters'], b)].append(int(r['lanes']))
print("medians (ms) of rounds 1-9 of both processes a build; over the graph; L: the most lanes a window took (median over rounds)")
for it in ['1000', '10000']:
    for sh in ['lc', 'ep', 'dc', 'mr', 'dag', 'rnd']:
        o = st.median(d[(sh, it, 'old', 'chariot')]); og = st.median(d[(sh, it, 'old', 'cuda-graph')])
        n = st.median(d[(sh, it, 'new', 'chariot')]); ng = st.median(d[(sh, it, 'new', 'cuda-graph')])
        print(f"{sh:4}{it:>6} | old {o:6.3f} {o/og:5.2f}x L{st.median(lanes[(sh, it, 'old')]):4.0f} | "
              f"new {n:6.3f} {n/ng:5.2f}x L{st.median(lanes[(sh, it, 'new')]):4.0f} | new/old {n/o:.3f}")
