#!/usr/bin/env bash
# Call K: the final build (recorded runs launched and ended by the calling thread where
# the dispatcher waits; the report's tuning lines made once, not at every synchronize).
# The runtime's GPU tests and chariot-align's end to end on this build; then the flow
# bench: the build before (ae99c6f, old), call J's build (mid: the caller's launch
# without the kept lines) and this one (new), alternated, 6 calls each, 5 rounds.
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
W=/tmp/callK; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4 5 6; do
  for b in old mid new; do
    d=.gpu-$b; [ $b = new ] && d=.gpu
    timeout 60 $d/flow --rounds 5 --csv "$W/flow-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
echo "flow done after $(( $(date +%s) - t0 )) s"
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-old-new.txt" 2>&1 || true
python3 .gpu/flow-recorded-parts.py "$W" old mid new > "$OUT/recorded-parts.txt" 2>&1 || true
grep "geometric\|rows above" "$OUT/flow-old-new.txt" "$OUT/recorded-parts.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
