#!/usr/bin/env bash
# Call F (issue 29): the flow bench of this build (synchronize sleeps until just before
# a recorded run's foreseen end, then spins; its spin reads the batch's count without
# the lock) against the build before (04e543b), alternated, 2 calls each, 3 rounds;
# then the GPU tests of recorded graphs and replay.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callF; rm -rf "$W"; mkdir -p "$W"
t0=$(date +%s)
for i in 1 2; do
  timeout 110 .gpu-old/flow --rounds 3 --csv "$W/flow-old-$i.csv" > "$W/flow-old-$i.log" 2>&1 || echo "old $i exit $?"
  echo "old $i after $(( $(date +%s) - t0 )) s"
  timeout 110 .gpu/flow --rounds 3 --csv "$W/flow-new-$i.csv" > "$W/flow-new-$i.log" 2>&1 || echo "new $i exit $?"
  echo "new $i after $(( $(date +%s) - t0 )) s"
done
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-summary.txt" 2>&1 || true
cat "$OUT/flow-summary.txt" | head -60
tar czf "$OUT/flow-csv.tgz" -C "$W" . || true
for t in recorded replay; do
  (cd .gpu && timeout 100 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s"; grep "test result" "$OUT/test-$t.log"
done
