#!/usr/bin/env bash
# Call A: the build before (20d792c, old) and the template-aware cuts (new), alternated,
# 4 calls each, 5 rounds, with every per-iteration run's windows (timeline).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callA; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  for b in old new; do
    timeout 90 .gpu/flow-$b --rounds 5 --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-old-new.txt" 2>&1 || true
grep "geometric" "$OUT/flow-old-new.txt"
cp "$W"/* "$OUT/"
