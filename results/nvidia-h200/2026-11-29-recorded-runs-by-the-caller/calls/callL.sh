#!/usr/bin/env bash
# Call L: what is left between a recorded run's completion and `synchronize` returning,
# on the rows it grows with the run's length. Call K's build (new) against two
# experiments: lead (synchronize stops sleeping 1 ms before the foreseen end, not
# 300 µs) and noturn (synchronize's spin takes no turn of the windows: the dispatcher
# alone sees the end). Alternated, 4 calls each, 5 rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callL; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  for b in new lead noturn; do
    d=.gpu-$b; [ $b = new ] && d=.gpu
    timeout 60 $d/flow --rounds 5 --csv "$W/flow-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
python3 .gpu/flow-recorded-parts.py "$W" new lead noturn > "$OUT/recorded-parts.txt" 2>&1 || true
grep "rows above" "$OUT/recorded-parts.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
