#!/usr/bin/env bash
# Call D (nvidia-h200-x2): the final build's GPU tests (the report's wide-window step
# time checked in the CUDA test of wide windows at D = 1 and 2; each recorded part's way),
# then one process of the flow bench's loop and hand-written graph, for the execution
# lines it prints.
set -euo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1 || true
for t in test-replay test-recorded test-gpu test-resident; do
  timeout 150 .gpu/$t --include-ignored --test-threads=1 > "$OUT/$t.log" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc: $(grep -E '^test result' "$OUT/$t.log" | tail -1)" | tee -a "$OUT/summary.txt"
done
timeout 150 .gpu/flow --variants chariot,graph --rounds 5 > "$OUT/flow.log" 2>&1 && rc=0 || rc=$?
echo "flow exit $rc" | tee -a "$OUT/summary.txt"
