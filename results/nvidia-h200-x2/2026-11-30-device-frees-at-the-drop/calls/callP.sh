#!/usr/bin/env bash
# Call P: as call N, with the fix for what call O found (a dispatcher that freed the last
# tasks' buffers bound another GPU's context and kept it: it now visits, as a GPU
# callback's library does). The GPU tests first, then the Cholesky bench, the build
# before (old, 3714a28) and the new alternated: N = 32 k, b = 2,048, D = 1 then 2
# (block-cyclic), three rounds each, no cuSOLVER baseline, one residual vector.
# Everything in two files (a call brings back few).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; S=$OUT/summary.txt; T=$OUT/tests.log
{ date -u; nvidia-smi -L; nproc; } > "$S" 2>&1
t0=$(date +%s)
for t in test-gpu test-recorded test-replay test-resident; do
  echo "=== $t" >> "$T"
  timeout 150 .gpu/$t --include-ignored --test-threads=1 >> "$T" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc at $(( $(date +%s) - t0 )) s: $(grep 'test result' "$T" | tail -1)" | tee -a "$S"
done
i=0
for b in old new new old; do
  i=$((i+1))
  bin=.gpu/cholesky; [ "$b" = old ] && bin=.gpu/old/cholesky
  echo "=== cholesky process $i ($b)" >> "$S"
  timeout 120 $bin --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 3 --no-baseline --vectors 1 \
    >> "$S" 2>&1 && rc=0 || rc=$?
  echo "cholesky process $i ($b) exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
done
