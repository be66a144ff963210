#!/usr/bin/env bash
# Call I (nvidia-h200-x2): chariot's recorded graphs at D = 1 and D = 2, each in a process
# of its own (flow --variants recorded --gpus D), with the hand-written graph in its own
# process, alternated call by call, 3 calls of 5 rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/csv
{ date -u; nvidia-smi -L; nproc; } > $OUT/machine.txt 2>&1
for call in 1 2 3; do
  steps=(graph d1 d2)
  for k in 0 1 2; do
    step=${steps[$(( (k + call) % 3 ))]}
    case $step in
      graph) .gpu/flow --variants graph --csv $OUT/csv/graph-$call.csv > $OUT/csv/graph-$call.txt 2>&1 ;;
      d1) .gpu/flow --variants recorded --gpus 1 --csv $OUT/csv/flow-d1-recorded-$call.csv > $OUT/csv/d1-$call.txt 2>&1 ;;
      d2) .gpu/flow --variants recorded --gpus 2 --csv $OUT/csv/flow-d2-recorded-$call.csv > $OUT/csv/d2-$call.txt 2>&1 ;;
    esac
  done
done
for call in 1 2 3; do for b in d1 d2; do cp $OUT/csv/graph-$call.csv $OUT/csv/flow-$b-graph-$call.csv; done; done
python3 .gpu/flow-summary.py $OUT/csv d1 d2 > $OUT/d1-d2.txt 2>&1
python3 - $OUT/csv > $OUT/d2-over-d1.txt <<'PY'
import csv, glob, math, statistics, sys, collections
d = collections.defaultdict(list); way = {}
for f in glob.glob(sys.argv[1] + "/flow-d[12]-recorded-*.csv"):
    b = f.split("/")[-1].split("-")[1]
    for r in csv.DictReader(open(f)):
        if r.get("way"): way[(r["shape"], r["iters"], b)] = r["way"]
        if r["round"] != "0": d[(r["shape"], r["iters"], b)].append(int(r["wall_ns"]))
rows = sorted({(k[0], k[1]) for k in d}, key=lambda x: (["lc","ep","dc","mr","dag","rnd"].index(x[0]), int(x[1])))
print("recorded graph, D = 2 over D = 1, each in a process of its own (medians of 3 calls x 5 rounds; ways)")
rs = []
for s, i in rows:
    a, b = statistics.median(d[(s, i, "d1")]), statistics.median(d[(s, i, "d2")])
    rs.append(b / a)
    print(f"{s:4}{i:>6} | D1 {a/1e3:9.1f} µs ({way.get((s,i,'d1'),'')}) D2 {b/1e3:9.1f} µs ({way.get((s,i,'d2'),'')}) | {b/a:5.3f}")
print(f"geometric mean {math.exp(statistics.mean(map(math.log, rs))):.3f}; rows above 1.00: {sum(r > 1.0 for r in rs)}; above 1.02: {sum(r > 1.02 for r in rs)}")
PY
cd $OUT && tar czf flow-csv.tgz csv && rm -rf csv
