#!/usr/bin/env bash
# Call S: (1) the new test cuda_a_kept_graph_sets_its_copies_again_after_memory_is_freed
# on a build with the copy nodes' renewal disabled (norenew/), then on the committed
# build; (2) the readbacks-held variant (last session's patch, applied on the committed
# build) against eager readbacks, alternated within every round: N = 32 k, b = 2,048,
# D = 1 then 2 (block-cyclic), three rounds, two processes.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; } > "$S" 2>&1
t0=$(date +%s)
for b in norenew/test-replay test-replay; do
  echo "=== $b" >> "$S"
  timeout 60 .gpu/$b cuda_a_kept_graph_sets_its_copies_again_after_memory_is_freed --exact --include-ignored --nocapture >> "$S" 2>&1 && rc=0 || rc=$?
  echo "$b exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
done
for i in 1 2; do
  order=eager,after-uploads; [ $i = 2 ] && order=after-uploads,eager
  echo "=== cholesky process $i ($order)" >> "$S"
  timeout 110 .gpu/cholesky-held --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 3 --no-baseline --vectors 1 \
    --readbacks $order >> "$S" 2>&1 && rc=0 || rc=$?
  echo "cholesky process $i exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
done
