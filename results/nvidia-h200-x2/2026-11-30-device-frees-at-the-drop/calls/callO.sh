#!/usr/bin/env bash
# Call O: call N's test-replay ended in a segmentation fault. The new build's and the
# build before's test-replay alternated, twice each, every test's name printed.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; L=$OUT/replay.log
{ date -u; nvidia-smi -L; } >> "$L" 2>&1
for b in new old new old; do
  bin=.gpu/test-replay; [ "$b" = old ] && bin=.gpu/old/test-replay
  echo "=== $b" >> "$L"
  timeout 120 $bin --include-ignored --test-threads=1 >> "$L" 2>&1 && rc=0 || rc=$?
  echo "=== $b exit $rc" >> "$L"
done
