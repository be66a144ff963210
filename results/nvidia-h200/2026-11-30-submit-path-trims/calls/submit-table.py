import re,statistics,collections,sys,math
d=sys.argv[1]
def load(v):
    r=collections.defaultdict(list)
    for line in open(f'{d}/submit-{v}.txt'):
        m=re.match(r'cuda (\w+) auto (\d+): submit µs/task median ([\d.]+) min ([\d.]+); wall µs median (\d+)',line)
        if m: r[m.group(1)].append((float(m.group(3)),float(m.group(5))))
    return r
old,new=load(sys.argv[2]),load(sys.argv[3])
print(f"submit probe, 200 batches a process on CUDA, Execution::Auto: medians over {len(next(iter(old.values())))} processes of each build's per-process medians")
print(f"shape | submit µs a task {sys.argv[2]} | {sys.argv[3]} | ratio | wall µs a batch {sys.argv[2]} | {sys.argv[3]} | ratio")
rs=[];ws=[]
for s in old:
    o=statistics.median(x[0] for x in old[s]); n=statistics.median(x[0] for x in new[s])
    ow=statistics.median(x[1] for x in old[s]); nw=statistics.median(x[1] for x in new[s])
    rs.append(n/o); ws.append(nw/ow)
    print(f"{s} | {o:.3f} | {n:.3f} | {n/o:.3f} | {ow:.0f} | {nw:.0f} | {nw/ow:.3f}")
g=lambda v: math.exp(sum(map(math.log,v))/len(v))
print(f"geometric mean | | | {g(rs):.3f} | | | {g(ws):.3f}")
