"""A fluid model of the tiled Cholesky with its copies (one GPU): the tile operations run
one at a time in largest-bottom-level order with fixed durations (ms, calibrated on the
16 k trace of ../../../../nvidia-h200-x2/2026-12-01-cholesky-traces-and-first-panel-dealt/),
the uploads and readbacks share the host link (55 GB/s each way alone, 45 both at once),
and a tile's readback starts when its last writer ends. It compares upload orders.

    python3 fluid.py       # prints the modelled wall and GPU idle time per order

A model, not a measurement: it predicted rows 2 % faster at 16 k (b = 2,048); the GPU
measured 8 % (../../a/).
"""
import heapq, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan import plan, writes, reads
def build(nt, dur):
    ops=plan(nt)
    writer={}; readers={}; preds=[set() for _ in ops]
    for o,op in enumerate(ops):
        for t in reads(op):
            if t in writer: preds[o].add(writer[t])
            readers.setdefault(t,[]).append(o)
        w=writes(op)
        if w in writer: preds[o].add(writer[w])
        for r in readers.get(w,[]):
            if r!=o: preds[o].add(r)
        readers[w]=[]; writer[w]=o
    succ=[[] for _ in ops]
    for o,p in enumerate(preds):
        for q in p: succ[q].append(o)
    bl=[0]*len(ops)
    for o in reversed(range(len(ops))):
        bl[o]=dur[ops[o][0]]+max([bl[s] for s in succ[o]],default=0)
    return ops,preds,succ,bl,writer
def simulate(nt, dur, tile_mb, order, solo=55.0, both=45.0, rb_hold=0, dt=0.005):
    ops,preds,succ,bl,lastw=build(nt,dur)
    tiles=[(i,j) for i in range(nt) for j in range(i+1)]
    firstuse={}
    for o,op in enumerate(ops):
        for t in reads(op)+[writes(op)]:
            if t in lastw and t not in firstuse and t[0]!='inv': firstuse[t]=o
    if order=='cols': up=sorted(tiles,key=lambda t:(-bl[firstuse[t]],tiles.index(t)))
    elif order=='rows': up=sorted(tiles)
    elif order=='colmajor': up=sorted(tiles,key=lambda t:(t[1],t[0]))
    elif callable(order): up=order(tiles,bl,firstuse)
    arrived=set(); needs=[[x for x in reads(op)+[writes(op)] if x in firstuse and firstuse[x]==o] for o,op in enumerate(ops)]
    npred=[len(p) for p in preds]
    ready=[]  # heap by -bl, ops whose preds done and tiles arrived
    waiting=set(o for o in range(len(ops)) if npred[o]==0)
    def promote():
        for o in list(waiting):
            if all(x in arrived for x in needs[o]):
                waiting.discard(o); heapq.heappush(ready,(-bl[o],o))
    t=0.0; gpu=None; gpu_end=0; up_i=0; up_left=tile_mb; rbq=[]; rb_left=None; done=0; busy=0
    final_op={lastw[x]:x for x in tiles}
    rb_done=0; idle=0
    while rb_done<len(tiles):
        # rates
        up_active = up_i<len(up)
        rb_active = rb_left is not None or (rbq and up_i>=rb_hold)
        if rb_left is None and rbq and up_i>=rb_hold: rb_left=tile_mb; rbq.pop(0)
        rb_active = rb_left is not None
        r = both if (up_active and rb_active) else solo
        if up_active:
            up_left -= r*dt  # MB/ms = GB/s
            if up_left<=0:
                arrived.add(up[up_i]); up_i+=1; up_left=tile_mb; promote()
        if rb_active:
            rb_left -= r*dt
            if rb_left<=0: rb_left=None; rb_done+=1
        if gpu is not None and t>=gpu_end:
            o=gpu; gpu=None; done+=1
            if o in final_op: rbq.append(final_op[o])
            for s in succ[o]:
                npred[s]-=1
                if npred[s]==0: waiting.add(s)
            promote()
        if gpu is None:
            if ready:
                _,o=heapq.heappop(ready); gpu=o; gpu_end=t+dur[ops[o][0]]
            elif done<len(ops): idle+=dt
        t+=dt
    return t, idle
if __name__=='__main__':
    import itertools
    cases=[(16384,2048,32,1),(8192,1024,8,0.15),(32768,2048,32,1)]
    for N,b,mb,scale in cases:
        nt=N//b
        dur={'GEMM':0.33*scale,'SYRK':0.16*scale,'TRSM':0.21*scale,'INV':0.2*scale,'POTRF':0.44*scale}
        if N==32768 : orders=['cols','rows']
        else: orders=['cols','rows','colmajor']
        for order in orders:
            for hold in ([0] if N==32768 else [0, len([1 for i in range(nt) for j in range(i+1)])//3]):
                w,i=simulate(nt,dur,mb,order,rb_hold=hold, dt=0.005 if N<32768 else 0.02)
                print(N,b,order,'hold',hold,'wall %.2f gpu idle %.2f'%(w,i), flush=True)
