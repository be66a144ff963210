#!/usr/bin/env bash
# Call O (one H200): windows' completion events made with timing. 1. The runtime's GPU
# tests (replay, recorded graphs, the GPU suite) of the new build. 2. The flow bench's
# 18 rows, chariot's per-iteration loop and its recorded graph, the build before
# (86c0fec, "old": untimed completion events) and the new one, each variant of each
# build in a process of its own, rotating, 3 turns of 5 timed rounds; the hand-written
# graph in 2 processes of its own.
set -u
mkdir -p "$OUT/o"
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
    timeout 120 .gpu/$b --variants $v --rounds 5 --csv "$OUT/o/$b-$v-$i.csv" > "$OUT/o/$b-$v-$i.log" 2>&1
    echo "$b $v $i exit $?" >> "$S"
  done
  [ $i -le 2 ] && { timeout 120 .gpu/flow --variants graph --rounds 5 --csv "$OUT/o/graph-$i.csv" > "$OUT/o/graph-$i.log" 2>&1; echo "graph $i exit $?" >> "$S"; }
done
(cd "$OUT" && tar czf o.tgz o && rm -rf o)
