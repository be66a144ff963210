#!/usr/bin/env bash
# Call M: call K's old (ae99c6f) and new (the commit) flow benches again, alternated,
# 8 calls each, 5 rounds: the recorded runs' rows near 1.0 over more calls.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callM; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4 5 6 7 8; do
  timeout 60 .gpu-old/flow --rounds 5 --csv "$W/flow-old-$i.csv" > "$W/flow-old-$i.log" 2>&1 || echo "old $i exit $?"
  timeout 60 .gpu/flow --rounds 5 --csv "$W/flow-new-$i.csv" > "$W/flow-new-$i.log" 2>&1 || echo "new $i exit $?"
done
python3 .gpu/flow-summary.py "$W" > "$OUT/flow-old-new.txt" 2>&1 || true
python3 .gpu/flow-recorded-parts.py "$W" old new > "$OUT/recorded-parts.txt" 2>&1 || true
grep "geometric\|rows above" "$OUT/flow-old-new.txt" "$OUT/recorded-parts.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
