#!/usr/bin/env bash
# Call M (one H200): the tree's loop at 10,000 iterations (dc, depth 10), 8 timed rounds
# a process, every window written: the build of 86c0fec (a replay window queued behind
# the one running, IN_FLIGHT = 2) against the same with IN_FLIGHT = 1 (a window issued
# only once the one before it ended), alternated, 5 processes each; and the random DAG
# and rnd at 10,000 the same way.
set -u
mkdir -p "$OUT/m"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for i in 1 2 3 4 5; do
  if [ $((i % 2)) = 1 ]; then order="flow flow-inflight1"; else order="flow-inflight1 flow"; fi
  for b in $order; do
    timeout 90 .gpu/$b --variants chariot --shapes dc,dag,rnd --iters 10000 --rounds 8 \
      --csv "$OUT/m/loop-$b-$i.csv" --windows "$OUT/m/windows-$b-$i.csv" > "$OUT/m/log-$b-$i.txt" 2>&1
    echo "$b $i exit $?" >> "$S"
  done
done
(cd "$OUT" && tar czf m.tgz m && rm -rf m)
