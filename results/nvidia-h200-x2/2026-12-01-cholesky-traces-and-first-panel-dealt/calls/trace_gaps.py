#!/usr/bin/env python3
"""Where each GPU's kernels stood idle in a chariot Chrome trace (the cholesky bench's
--trace): for every gap of more than 20 µs between the kernel-stage commands of a GPU,
the kernel that ended it, split into
  dep same gpu / dep other gpu: until its last predecessor (a dependency of the report)
      ended, on this GPU or the other;
  fetch after dep: from then until its own copies (resident fetches) ended;
  ready, not started: the rest, ready with its data where it runs, not yet started.
Usage: trace_gaps.py TRACE.json ..."""
import collections
import json
import sys


def main(path, thresh_us=20):
    ev = json.load(open(path))['traceEvents']
    recs = [e for e in ev if e.get('ph') == 'X' and e['tid'] < 100]  # stage tracks only
    by = collections.defaultdict(list)
    for r in recs:
        by['#' + str(r['args']['task'])].append(r)
    preds = collections.defaultdict(list)
    for e in ev:
        if e.get('ph') == 's':
            a, b = e['name'].split(' -> ')
            preds[b].append(a)
    end = {t: max(r['ts'] + r['dur'] for r in rs) for t, rs in by.items()}
    gpu = {t: rs[-1]['pid'] for t, rs in by.items()}
    origin = min(r['ts'] for r in recs)
    for g in sorted(set(r['pid'] for r in recs)):
        ks = sorted([r for r in recs if r['pid'] == g and r['cat'] == 'kernel'], key=lambda r: r['ts'])
        reach, busy = ks[0]['ts'], 0
        parts, ex = collections.Counter(), collections.defaultdict(list)
        for r in ks:
            if r['ts'] > reach + thresh_us:
                t, gs, st = '#' + str(r['args']['task']), reach, r['ts']
                ready, rq = max([(end.get(q, 0), q) for q in preds.get(t, [])] or [(0, None)])
                fe = max([x['ts'] + x['dur'] for x in by[t] if x['cat'] != 'kernel' and x['ts'] + x['dur'] <= st + 1] or [0])
                dep = max(0, min(ready, st) - gs)
                fetch = max(0, min(fe, st) - max(ready, gs))
                rest = st - gs - dep - fetch
                k = 'dep other gpu' if rq is not None and gpu.get(rq) != g else 'dep same gpu'
                parts[k] += dep
                parts['fetch after dep'] += fetch
                parts['ready, not started'] += rest
                if dep > 200:
                    ex[k].append((round(gs - origin), round(dep), t, rq))
                if rest > 200:
                    ex['ready, not started'].append((round(gs - origin), round(rest), t))
            busy += max(0, r['ts'] + r['dur'] - max(r['ts'], reach))
            reach = max(reach, r['ts'] + r['dur'])
        span = reach - ks[0]['ts']
        print(f"{path.split('/')[-1]} GPU {g}: kernels busy {busy/1e3:.1f} of span {span/1e3:.1f} ms "
              f"({(ks[0]['ts']-origin)/1e3:.1f}..{(reach-origin)/1e3:.1f}); idle in span {(span-busy)/1e3:.1f} ms: "
              + ", ".join(f"{k} {v/1e3:.1f}" for k, v in parts.most_common()))
        for k, v in ex.items():
            print(f"     {k} (gap start µs, µs, task, predecessor): {v[:5]}")


for p in sys.argv[1:]:
    main(p)
