#!/usr/bin/env bash
# Call S (one H200): the runtime's GPU tests (replay, recorded graphs, the GPU suite) on
# the final build, 6122800 (the timed end renamed from drain).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
for t in replay recorded gpu; do
  echo "== test-$t" >> "$L"; timeout 240 .gpu/test-$t --include-ignored --test-threads 1 >> "$L" 2>&1; echo "test-$t exit $?" >> "$S"
done
grep "^test result" "$L" >> "$S"
