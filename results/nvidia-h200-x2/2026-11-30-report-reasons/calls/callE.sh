#!/usr/bin/env bash
# Call E (nvidia-h200-x2): the recorded and replay GPU tests of the mend that counts a
# recorded part's run and takes its reason under one lock (45f35e5).
set -euo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1 || true
for t in test-recorded test-replay; do
  timeout 150 .gpu/$t --include-ignored --test-threads=1 > "$OUT/$t.log" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc: $(grep -E '^test result' "$OUT/$t.log" | tail -1)" | tee -a "$OUT/summary.txt"
done
