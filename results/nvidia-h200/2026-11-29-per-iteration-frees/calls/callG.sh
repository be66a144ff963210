#!/usr/bin/env bash
# Call G: the commit's runtime GPU tests (gpu, recorded, replay, resident); then the
# flow bench of the build before (20d792c, old) and of the commit (new), alternated,
# 6 calls each, 5 rounds, every variant (the recorded graph too), with the windows of
# every per-iteration run.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 150 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callG; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4 5 6; do
  for b in old new; do
    timeout 90 .gpu/flow-$b --rounds 5 --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-old-new.txt" 2>&1 || true
python3 .gpu/flow-recorded-parts.py "$W" old new > "$OUT/recorded-parts.txt" 2>&1 || true
grep "geometric\|mean difference\|rows above" "$OUT/flow-old-new.txt" "$OUT/recorded-parts.txt"
cp "$W"/*.csv "$W"/*.log "$OUT/"
