#!/usr/bin/env bash
# Call W (one H200): the demo with no flags (470 kernel rounds an element, 5 timed runs
# each): "old" call T's new build (b9c6d86), "new" with the task graph by index,
# alternated, 5 pairs.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
for i in 1 2 3 4 5; do
  if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    bin=.gpu/chariot-demo; [ $v = old ] && bin=.gpu/chariot-demo-old
    timeout 120 $bin --iters 470 --repeat 5 > "$OUT/demo-$v-$i.log" 2>&1; rc=$?
    echo "demo $v $i exit $rc: $(grep -E '^ +default ' "$OUT/demo-$v-$i.log" | head -1) | $(grep -m1 -o 'bound check[^(]*' "$OUT/demo-$v-$i.log")" >> "$S"
  done
done
(cd "$OUT/.." && tar czf w.tgz w)
cat "$S"
