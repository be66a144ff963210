#!/usr/bin/env bash
# Call N: the final build (the dispatcher's state dropped on its own thread): the
# runtime's GPU tests, twice; then the flow bench, 2 calls, 5 rounds, to see that
# nothing moved.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for pass in 1 2; do
  for t in gpu recorded replay resident; do
    (cd .gpu && timeout 120 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t-$pass.log" 2>&1
    echo "test-$t pass $pass exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t-$pass.log" | tail -1)"
  done
done
W=/tmp/callN; rm -rf "$W"; mkdir -p "$W"
for i in 1 2; do
  timeout 60 .gpu/flow --rounds 5 --csv "$W/flow-new-$i.csv" > "$W/flow-new-$i.log" 2>&1 || echo "new $i exit $?"
done
python3 .gpu/flow-recorded-parts.py "$W" new > "$OUT/recorded-parts.txt" 2>&1 || true
grep "rows above" "$OUT/recorded-parts.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
