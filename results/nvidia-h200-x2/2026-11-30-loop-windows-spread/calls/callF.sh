#!/usr/bin/env bash
# The final build (b468fae): its GPU tests with both GPUs visible, and MUSTARD rnd 4096
# at 10,000 spin iterations with 264 blocks a node at D = 1 and 2, twice.
set -euo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1 || true
t0=$(date +%s)
for t in gpu recorded replay resident; do
  timeout 150 .gpu/test-$t --include-ignored --test-threads=1 > "$OUT/test-$t.log" 2>&1 && rc=0 || rc=$?
  echo "test-$t exit $rc after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=$OUT/rnd; mkdir -p "$W"
for i in 1 2; do
  for d in 1 2; do
    timeout 90 .gpu/flow --gpus $d --blocks 264 --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
      --csv "$W/rnd4096-b264-new-d$d-$i.csv" > "$W/rnd4096-b264-new-d$d-$i.log" 2>&1 && rc=0 || rc=$?
    [ $rc -eq 0 ] || echo "rnd d$d $i exit $rc"
  done
done
python3 scripts/gpu/flow-rnd-scaling.py "$W" > "$OUT/rnd-scaling.txt" 2>&1 || true
(cd "$OUT" && tar cJf logs.tar.xz rnd && rm -rf rnd) || true
