#!/usr/bin/env bash
# Call K (one H200): why the tree's loop at 10,000 iterations varies 1.1-3.3 ms a batch
# (call J). chariot's per-iteration loop on dc, rnd and ep at 10,000 iterations, 8 timed
# rounds after its warm-up, every window written, with the dispatcher pinned (the
# default) and unpinned (--pin-dispatchers false), alternated, 4 processes each; the
# host's CPU described.
set -u
mkdir -p "$OUT/k"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; lscpu | grep -E "Model name|Socket|Core|Thread|MHz|NUMA"; } >> "$S"
for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then order="true false"; else order="false true"; fi
  for p in $order; do
    timeout 90 .gpu/flow --variants chariot --shapes dc,rnd,ep --iters 10000 --rounds 8 --pin-dispatchers $p \
      --csv "$OUT/k/loop-$p-$i.csv" --windows "$OUT/k/windows-$p-$i.csv" > "$OUT/k/log-$p-$i.txt" 2>&1
    echo "pin $p $i exit $?" >> "$S"
  done
done
(cd "$OUT" && tar czf k.tgz k && rm -rf k)
