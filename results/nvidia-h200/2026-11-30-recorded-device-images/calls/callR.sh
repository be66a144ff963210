#!/usr/bin/env bash
# Call R (nvidia-h200): the kept image found by index, as the replayer finds a kept graph (the second mend):
# the GPU tests, and the recorded graph's device rows of the flow bench, one process.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
t0=$(date +%s)
for t in test-recorded test-replay test-gpu; do
  timeout 150 $B/$t --include-ignored --test-threads=1 --nocapture > $W/$t.log 2>&1
  echo "$t exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
timeout 100 $B/flow --variants graph,recorded --shapes ep,dc,dag --iters 0,1000 --rounds 5 > $W/flow.log 2>&1
echo "flow exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
grep -h "test result" $W/test-*.log >> $S
grep -E "^(ep|dc|dag) " $W/flow.log >> $S
