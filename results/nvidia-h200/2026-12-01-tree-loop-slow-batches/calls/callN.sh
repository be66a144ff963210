#!/usr/bin/env bash
# Call N (one H200): the tree's (dc) and the random DAG's loops at 10,000 iterations,
# 8 timed rounds a process, every window written: the build of 86c0fec ("flow"), the
# same with each window's completion event made with timing ("flow-endtimed"), and the
# build with --device-timing (a timed event before each window too), alternated in
# rotation, 4 processes each.
set -u
mkdir -p "$OUT/n"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
runs=("flow ." "flow-endtimed ." "flow --device-timing")
for i in 1 2 3 4; do
  for k in 0 1 2; do
    read -r b extra <<< "${runs[$(( (i - 1 + k) % 3 ))]}"
    name=$b; [ "$extra" = "--device-timing" ] && name=flow-timed
    [ "$extra" = "." ] && extra=""
    timeout 90 .gpu/$b --variants chariot --shapes dc,dag --iters 10000 --rounds 8 $extra \
      --csv "$OUT/n/loop-$name-$i.csv" --windows "$OUT/n/windows-$name-$i.csv" > "$OUT/n/log-$name-$i.txt" 2>&1
    echo "$name $i exit $?" >> "$S"
  done
done
(cd "$OUT" && tar czf n.tgz n && rm -rf n)
