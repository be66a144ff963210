import csv,glob,statistics as st,collections,sys,math
D=sys.argv[1]; lo=int(sys.argv[2]) if len(sys.argv)>2 else 1
d=collections.defaultdict(list); lanes=collections.defaultdict(list)
for f in glob.glob(D+'/flow-*.csv'):
    b='old' if '-old-' in f else 'new'
    for r in csv.DictReader(open(f)):
        if int(r['round'])<lo: continue
        d[(r['shape'],r['iters'],b,r['variant'])].append(int(r['wall_ns'])/1e6)
        if r['variant']=='chariot': lanes[(r['shape'],r['iters'],b)].append(int(r['lanes']))
print(f"rounds >= {lo}: medians (ms); chariot's defaults over the hand-written graph of the same build; the most lanes a window took")
print(f"{'shape':5}{'iters':>6} | {'old':>7} {'/g':>5} {'lanes':>5} | {'new':>7} {'/g':>5} {'lanes':>5} | new/old")
gm=[[],[],[]]
for sh in ['lc','ep','dc','mr','dag','rnd']:
  for it in ['0','1000','10000']:
    o=st.median(d[(sh,it,'old','chariot')]); og=st.median(d[(sh,it,'old','cuda-graph')])
    n=st.median(d[(sh,it,'new','chariot')]); ng=st.median(d[(sh,it,'new','cuda-graph')])
    gm[0].append(o/og); gm[1].append(n/ng); gm[2].append(n/o)
    print(f"{sh:5}{it:>6} | {o:7.3f} {o/og:5.2f} {max(lanes[(sh,it,'old')]):5d} | {n:7.3f} {n/ng:5.2f} {st.median(lanes[(sh,it,'new')]):5.0f} | {n/o:.3f}")
g=lambda v: math.exp(sum(map(math.log,v))/len(v))
print(f"geometric means: old over graph {g(gm[0]):.3f}, new over graph {g(gm[1]):.3f}, new over old {g(gm[2]):.3f}; rows at most 1.5x the graph: old {sum(x<=1.5 for x in gm[0])}, new {sum(x<=1.5 for x in gm[1])} of 18")
