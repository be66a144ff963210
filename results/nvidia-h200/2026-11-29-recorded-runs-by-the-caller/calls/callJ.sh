#!/usr/bin/env bash
# Call J: recorded runs launched and ended by the calling thread where the dispatcher
# waits. The runtime's GPU tests and chariot-align's end to end on this build; then the
# flow bench, the build before (ae99c6f, old) and this one alternated, 4 calls each,
# 5 rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 120 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
(cd .gpu && timeout 260 ./test-chariot-align-end_to_end --ignored --test-threads=1) > "$OUT/test-align.log" 2>&1
echo "align exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-align.log" | tail -1)"
W=/tmp/callJ; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  timeout 60 .gpu-old/flow --rounds 5 --csv "$W/flow-old-$i.csv" > "$W/flow-old-$i.log" 2>&1 || echo "old $i exit $?"
  timeout 60 .gpu/flow --rounds 5 --csv "$W/flow-new-$i.csv" > "$W/flow-new-$i.log" 2>&1 || echo "new $i exit $?"
done
echo "flow done after $(( $(date +%s) - t0 )) s"
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-old-new.txt" 2>&1 || true
python3 .gpu/flow-recorded-parts.py "$W" old new > "$OUT/recorded-parts.txt" 2>&1 || true
grep "geometric\|rows above" "$OUT/flow-old-new.txt" "$OUT/recorded-parts.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
