#!/usr/bin/env bash
# Call N: a device buffer dropped with no task in flight is freed at once, not at the next
# synchronize. First the Cholesky bench, the build before (old, 3714a28) and the new
# alternated (old, new, new, old): N = 32 k, b = 2,048, D = 1 then 2 (block-cyclic),
# three rounds each, no cuSOLVER baseline, one residual vector. Then the GPU tests of
# the new build with both GPUs visible.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
i=0
for b in old new new old; do
  i=$((i+1))
  bin=.gpu/cholesky; [ "$b" = old ] && bin=.gpu/old/cholesky
  timeout 120 $bin --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 3 --no-baseline --vectors 1 \
    --csv "$OUT/chol-$i-$b.csv" > "$OUT/chol-$i-$b.log" 2>&1 && rc=0 || rc=$?
  echo "cholesky process $i ($b) exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
done
for t in test-gpu test-recorded test-replay test-resident; do
  timeout 150 .gpu/$t --include-ignored --test-threads=1 > "$OUT/$t.log" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc at $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/$t.log" | tail -1)" | tee -a "$S"
done
