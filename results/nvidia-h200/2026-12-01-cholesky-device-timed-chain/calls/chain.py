"""Device-timed Chrome traces of the cholesky bench (D = 1, --device-timing), read by
operation: each operation's kernel time, the GPU's idle gaps (no kernel running), and
the chain from one step to the next, POTRF(k) → INVERSE(k) → TRSM(k+1, k) →
SYRK(k+1, k) → POTRF(k+1), summed over the steps.

    python3 chain.py TRACE.json NT [TRACE.json NT ...]

NT is the tiles a side (N / b). The task ids are mapped to operations by the plan in
../../2026-12-01-cholesky-upload-order/calls/model/plan.py.
"""
import collections, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', '..', '2026-12-01-cholesky-upload-order', 'calls', 'model'))
from plan import plan, steps  # noqa: E402


def read(path, nt):
    d = json.load(open(path))
    ev = [e for e in d['traceEvents'] if 'args' in e and e.get('ph') == 'X']
    ops = plan(nt)
    st = steps(nt, ops)
    t0 = min(e['ts'] for e in ev)
    ks = sorted([e for e in ev if e['cat'] == 'kernel'], key=lambda e: e['ts'])
    busy, reach, first = 0.0, None, None
    for e in ks:
        s, t = e['ts'], e['ts'] + e['dur']
        if reach is None:
            reach, first, busy = t, s, t - s
        elif s > reach:
            busy += t - s
            reach = t
        elif t > reach:
            busy += t - reach
            reach = t
    print('%s: kernels busy %.2f ms of their span %.2f (%.2f to %.2f ms)' %
          (os.path.basename(path), busy / 1e3, (reach - first) / 1e3, (first - t0) / 1e3, (reach - t0) / 1e3))
    by = collections.defaultdict(list)
    at = {}
    for e in ks:
        op = ops[st[e['args']['task']][1]]
        by[op[0]].append(e['dur'])
        at[op] = e['dur']
    for name, v in sorted(by.items()):
        v.sort()
        print('   %-6s %3d, µs: median %5.0f, min %5.0f, max %5.0f, sum %6.0f' %
              (name, len(v), v[len(v) // 2], v[0], v[-1], sum(v)))
    chain = potrf = inv = 0.0
    for k in range(nt):
        potrf += at[('POTRF', k, k, k)]
        if k + 1 < nt:
            inv += at[('INV', k, k, k)]
            chain += at[('INV', k, k, k)] + at[('TRSM', k + 1, k, k)] + at[('SYRK', k + 1, k + 1, k)]
    chain += potrf
    print('   the chain of steps: %.2f ms (POTRF %.2f, INVERSE %.2f)' % (chain / 1e3, potrf / 1e3, inv / 1e3))


if __name__ == '__main__':
    args = sys.argv[1:]
    for path, nt in zip(args[::2], args[1::2]):
        read(path, int(nt))
