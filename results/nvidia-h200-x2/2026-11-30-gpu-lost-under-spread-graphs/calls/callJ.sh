#!/usr/bin/env bash
# Call J: the GPU tests of the committed build with both GPUs visible, the new two-GPU
# test of a sticky error in a spread window first, on its own.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
# The child's output (the report, the failures) is printed only on failure: run it as
# its own child here, with --nocapture, to keep it.
CHARIOT_GPU_TEST_CHILD=cuda_sticky_error_in_a_window_spread_over_two_gpus_fails_it_cleanly timeout 200 \
  .gpu/test-gpu cuda_sticky_error_in_a_window_spread_over_two_gpus_fails_it_cleanly --exact --include-ignored --nocapture \
  > "$OUT/spread-sticky.log" 2>&1 && rc=0 || rc=$?
echo "spread sticky (child, output kept) exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
for t in test-gpu test-recorded test-replay test-resident; do
  timeout 200 .gpu/$t --include-ignored --test-threads=1 > "$OUT/$t.log" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc at $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/$t.log" | tail -1)" | tee -a "$S"
done
