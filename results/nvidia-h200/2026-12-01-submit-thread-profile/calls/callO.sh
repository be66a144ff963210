#!/usr/bin/env bash
# Call O (one H200): the final build (HEAD as staged). 1. The runtime's GPU tests
# (replay, recorded graphs, the GPU suite). 2. The demo with no flags (the paper's
# dummy shift kernel over 48 chunks, milliseconds a task), the build before (588cf00,
# "old") and this one ("new") alternated, 3 calls of 5 timed runs each (470 kernel rounds an element, as scripts/gpu/gpu-steps.sh runs it): that the
# padding left the pipelines of long tasks as they were.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    bin=.gpu/chariot-demo; [ $v = old ] && bin=.gpu/chariot-demo-old
    timeout 120 $bin --iters 470 --repeat 5 > "$OUT/demo-$v-$i.log" 2>&1; rc=$?
    echo "demo $v $i exit $rc: $(grep -E '^ +default ' "$OUT/demo-$v-$i.log" | head -1) | $(grep -m1 -o 'bound check[^(]*' "$OUT/demo-$v-$i.log")" >> "$S"
  done
done
cat "$S"
