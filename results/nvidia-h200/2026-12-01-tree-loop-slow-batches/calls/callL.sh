#!/usr/bin/env bash
# Call L (one H200): the tree's loop at 10,000 iterations, its windows timed on the GPU
# (--device-timing: gpu_us in the windows CSV), 5 processes of 8 rounds; is a slow
# batch slow on the GPU, or seen late by the host?
set -u
mkdir -p "$OUT/l"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for i in 1 2 3 4 5; do
  timeout 90 .gpu/flow --variants chariot --shapes dc --iters 10000 --rounds 8 --device-timing \
    --csv "$OUT/l/loop-$i.csv" --windows "$OUT/l/windows-$i.csv" > "$OUT/l/log-$i.txt" 2>&1
  echo "timed $i exit $?" >> "$S"
done
(cd "$OUT" && tar czf l.tgz l && rm -rf l)
