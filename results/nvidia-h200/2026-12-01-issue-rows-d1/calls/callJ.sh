#!/usr/bin/env bash
# Call J (one H200): the flow bench of bdb1694 (the loop's warm-up ends after three batches
# alike). 1. The tree (dc, depth 10) at 10,000 spin iterations, chariot's per-iteration
# loop, 6 processes of 8 timed rounds, every window written (--windows): the wide
# windows' spans, which one process of call I ran 3× longer than the others. 2. The
# flow shapes against every peer, each variant in a process of its own
# (scripts/gpu/flow-peers.sh, OWN=1, 2 calls of 5 timed rounds).
set -u
mkdir -p "$OUT/dc"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
for i in 1 2 3 4 5 6; do
  timeout 60 .gpu/flow --variants chariot --shapes dc --iters 10000 --rounds 8 --csv "$OUT/dc/loop-$i.csv" --windows "$OUT/dc/windows-$i.csv" > "$OUT/dc/log-$i.txt" 2>&1
  echo "dc loop $i exit $?" >> "$S"
done
timeout 60 .gpu/flow --variants graph --shapes dc --iters 10000 --rounds 8 --csv "$OUT/dc/graph.csv" > "$OUT/dc/log-graph.txt" 2>&1
echo "dc graph exit $?" >> "$S"
(cd "$OUT" && tar czf dc.tgz dc && rm -rf dc)
t0=$(date +%s)
OWN=1 CALLS=2 ROUNDS=5 STEPS="build flow summary" B=.gpu W="$PWD/.peers/w" OUT="$OUT/peers" bash scripts/gpu/flow-peers.sh > "$OUT/peers.log" 2>&1
echo "flow-peers exit $? in $(( $(date +%s) - t0 )) s" >> "$S"
(cd .peers/w && tar czf "$OUT/logs.tgz" flow-*.csv flow-*.log 2>/dev/null)
cp "$OUT/peers/summary.txt" "$OUT/flow-summary.txt"; rm -rf "$OUT/peers"
