#!/usr/bin/env bash
# Call G (one H200): the runtime's GPU tests (replay, recorded graphs, the GPU suite)
# of 03b660d (the windows' GPU time measured in one place; the kept layout followed on one GPU only).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
