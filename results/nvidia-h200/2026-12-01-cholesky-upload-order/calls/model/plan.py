"""The study's plan (right-looking, an INVERSE a step) in Python, for fluid.py, and the
kernel durations of a Chrome trace by operation:

    python3 plan.py TRACE.json NT
"""
import json, collections, sys
def plan(nt):
    ops=[]
    for k in range(nt):
        ops.append(('POTRF',k,k,k))
        if k+1<nt: ops.append(('INV',k,k,k))
        for i in range(k+1,nt): ops.append(('TRSM',i,k,k))
        for i in range(k+1,nt):
            ops.append(('SYRK',i,i,k))
            for j in range(k+1,i): ops.append(('GEMM',i,j,k))
    return ops
def writes(op):
    n,i,j,k=op
    if n=='INV': return ('inv',k)
    return (i,j)
def reads(op):
    n,i,j,k=op
    if n=='POTRF': return []
    if n=='INV': return [(k,k)]
    if n=='TRSM': return [('inv',k)]
    if n=='SYRK': return [(i,k)]
    return [(i,k),(j,k)]
def steps(nt,ops):
    tiles=[(i,j) for i in range(nt) for j in range(i+1)]
    # last writer
    lw={}
    for o,op in enumerate(ops): lw[writes(op)]=o
    out=[('U',t) for t in tiles]  # upload order in ids unknown; ids count uploads first
    for o,op in enumerate(ops):
        out.append(('O',o))
        w=writes(op)
        if w[0]!='inv' and lw[w]==o: out.append(('R',w))
    return out
if __name__=='__main__':
    f=sys.argv[1]; nt=int(sys.argv[2])
    d=json.load(open(f)); ev=d['traceEvents']
    ops=plan(nt); st=steps(nt,ops)
    nup=nt*(nt+1)//2
    dur=collections.defaultdict(list)
    for e in ev:
        if e.get('cat')=='kernel' and 'args' in e:
            tid=e['args']['task']
            s=st[tid]
            assert s[0]=='O', (tid,s)
            dur[ops[s[1]][0]].append(e['dur'])
    for k,v in dur.items(): 
        v.sort(); print(k,len(v),'median',v[len(v)//2],'min',v[0],'max',v[-1],'sum',round(sum(v)))
