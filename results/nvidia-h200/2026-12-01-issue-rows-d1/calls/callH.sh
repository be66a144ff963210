#!/usr/bin/env bash
# Call H (one H200): the flow bench's per-iteration loop (chariot's defaults) in steady
# state, 12 timed rounds, each window of it written with its lanes and graph set-up
# (--windows), and the hand-written CUDA graph, each in a process of its own,
# alternated: loop, graph, loop, graph.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for i in 1 2; do
  step loop$i timeout 240 .gpu/flow --variants chariot --rounds 12 --csv "$OUT/loop-$i.csv" --windows "$OUT/windows-$i.csv"
  step graph$i timeout 240 .gpu/flow --variants graph --rounds 12 --csv "$OUT/graph-$i.csv"
done
(cd "$OUT" && tar czf windows.tgz windows-*.csv && rm windows-*.csv)
