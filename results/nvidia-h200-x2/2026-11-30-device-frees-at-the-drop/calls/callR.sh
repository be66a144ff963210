#!/usr/bin/env bash
# Call R: the GPU tests with both GPUs visible, after call Q's find (a kept graph's copy
# nodes set before a free crashed cuGraphLaunch once their address came back): copy
# nodes are set again after any free. The replay suite first, its new test on its own.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"; S=$OUT/summary.txt; T=$OUT/tests.log
{ date -u; nvidia-smi -L; nproc; } > "$S" 2>&1
t0=$(date +%s)
for t in test-replay test-gpu test-recorded test-resident; do
  timeout 150 .gpu/$t --include-ignored --test-threads=1 > "$OUT/cur.log" 2>&1 && rc=0 || rc=$?
  echo "$t exit $rc at $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/cur.log" | tail -1)" | tee -a "$S"
  { echo "=== $t"; cat "$OUT/cur.log"; } >> "$T"; rm -f "$OUT/cur.log"
done
