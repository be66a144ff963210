#!/usr/bin/env python3
"""Summarises a sub-window campaign (scripts/gpu/subwindow-gpu-check.sh): per shape, size and
iterations, the medians over the calls of chariot's and host dispatch's time over the
hand-written CUDA graph's, new build against old; or, with --cuts, the chariot/graph
medians of the cut-size variants (flow-<first>-<last>-<call>.log)."""
import collections, glob, os, re, statistics, sys

def rows_of(path):
    for line in open(path):
        p = line.split('|')
        if len(p) >= 5 and re.match(r'^(lc|ep|dc|mr|dag|rnd) ', p[0]):
            a = p[0].split()
            yield (a[0], int(a[1]), int(a[4])), float(p[1].split()[0]), float(p[2].split()[0]), float(p[3].split()[0])

def main():
    d = sys.argv[-1]
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    if '--cuts' in sys.argv:
        for f in sorted(glob.glob(os.path.join(d, '*.log'))):
            v = re.sub(r'-\d+\.log$', '', os.path.basename(f))
            for k, c, h, g in rows_of(f):
                by[k][v].append(c / g)
        variants = sorted({v for k in by for v in by[k]}, key=lambda v: int(v.split('-')[1]))
        print('chariot / CUDA graph, medians; variant = sub-window cuts first-last (65536 = none)')
        print('%-4s %5s %6s  ' % ('shape', 'size', 'iters') + ' '.join('%14s' % v for v in variants))
        for k in sorted(by):
            print('%-4s %5d %6d  ' % k + ' '.join('%14.2f' % statistics.median(by[k][v]) for v in variants))
        return
    for f in glob.glob(os.path.join(d, 'flow-*.log')) + glob.glob(os.path.join(d, 'mustard-*.log')):
        v = 'new' if '-new-' in f else 'old'
        for k, c, h, g in rows_of(f):
            by[k][v].append((c / g, h / g, g))
    print('medians over the calls: chariot (defaults) / CUDA graph, new and old; host dispatch / graph; graph ms')
    print('%-4s %5s %6s | %7s %7s | %7s %7s | %8s %3s' % ('shape', 'size', 'iters', 'new', 'old', 'host n', 'host o', 'graph', 'n'))
    for k in sorted(by):
        n, o = by[k]['new'], by[k]['old']
        m = lambda l, i: statistics.median(x[i] for x in l)
        print('%-4s %5d %6d | %7.2f %7.2f | %7.2f %7.2f | %8.3f %3d' % (*k, m(n, 0), m(o, 0), m(n, 1), m(o, 1), m(n, 2), len(n)))

main()
