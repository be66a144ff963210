#!/usr/bin/env bash
# Call P (one H200): a batch's windows on lanes past S drain (a timed completion event:
# nothing behind them starts early). 1. The runtime's GPU tests (replay, whose wide
# test now also checks which windows drained; recorded graphs; the GPU suite). 2. The
# flow bench's 18 rows, chariot's per-iteration loop and its recorded graph, the build
# before (86c0fec, "old") and this one, each variant of each build in a process of its
# own, rotating, 3 turns of 5 timed rounds; the hand-written graph in 2 processes.
# 3. The tree and the random DAG at 10,000 iterations, the loop, 8 timed rounds, every
# window written, old and new alternated, 4 processes each.
set -u
mkdir -p "$OUT/p"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
runs=("flow-old chariot" "flow chariot" "flow-old recorded" "flow recorded")
for i in 1 2 3; do
  for k in 0 1 2 3; do
    read -r b v <<< "${runs[$(( (i - 1 + k) % 4 ))]}"
    timeout 120 .gpu/$b --variants $v --rounds 5 --csv "$OUT/p/$b-$v-$i.csv" > "$OUT/p/$b-$v-$i.log" 2>&1
    echo "$b $v $i exit $?" >> "$S"
  done
  [ $i -le 2 ] && { timeout 120 .gpu/flow --variants graph --rounds 5 --csv "$OUT/p/graph-$i.csv" > "$OUT/p/graph-$i.log" 2>&1; echo "graph $i exit $?" >> "$S"; }
done
mkdir -p "$OUT/p/wide"
for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then order="flow-old flow"; else order="flow flow-old"; fi
  for b in $order; do
    timeout 90 .gpu/$b --variants chariot --shapes dc,dag --iters 10000 --rounds 8 \
      --csv "$OUT/p/wide/loop-$b-$i.csv" --windows "$OUT/p/wide/windows-$b-$i.csv" > "$OUT/p/wide/log-$b-$i.txt" 2>&1
    echo "wide $b $i exit $?" >> "$S"
  done
done
(cd "$OUT" && tar czf p.tgz p && rm -rf p)
