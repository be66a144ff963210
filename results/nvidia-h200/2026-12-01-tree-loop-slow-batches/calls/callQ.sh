#!/usr/bin/env bash
# Call Q (one H200): old (86c0fec) against new (windows on lanes past S drain), the
# per-iteration loop on the tree and the random DAG at 10,000 iterations (wide windows,
# drained in new) and at 0 (16 lanes, the same code in both: the noise between
# processes), 8 timed rounds, alternated, 8 processes each.
set -u
mkdir -p "$OUT/q"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for i in 1 2 3 4 5 6 7 8; do
  if [ $((i % 2)) = 1 ]; then order="flow-old flow"; else order="flow flow-old"; fi
  for b in $order; do
    timeout 90 .gpu/$b --variants chariot --shapes dc,dag --iters 0,10000 --rounds 8 \
      --csv "$OUT/q/loop-$b-$i.csv" --windows "$OUT/q/windows-$b-$i.csv" > "$OUT/q/log-$b-$i.txt" 2>&1
    echo "$b $i exit $?" >> "$S"
  done
done
(cd "$OUT" && tar czf q.tgz q && rm -rf q)
