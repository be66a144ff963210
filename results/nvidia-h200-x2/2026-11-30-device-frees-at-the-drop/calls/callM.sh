#!/usr/bin/env bash
# Call M: is a Cholesky run after the first slower because the last run's device tiles are
# freed just before its clock? Four processes alternated: the default, --free-early,
# --free-early, the default; each N = 32 k, b = 2,048, D = 1 then 2 (block-cyclic), three
# rounds, no cuSOLVER baseline, one residual vector; SM clocks sampled every 50 ms.
set -u
mkdir -p "$OUT"
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu --format=csv -lms 50 > "$OUT/clocks.csv" 2>&1 &
smi=$!
i=0
for v in default free-early free-early default; do
  i=$((i+1))
  extra=""; [ "$v" = free-early ] && extra="--free-early"
  echo "$(date +%T.%N) process $i $v start" >> "$OUT/exits.txt"
  timeout 140 .gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 3 --no-baseline --vectors 1 \
    $extra --csv "$OUT/chol-$i-$v.csv" > "$OUT/chol-$i-$v.log" 2>&1
  echo "$(date +%T.%N) process $i $v exit $?" >> "$OUT/exits.txt"
done
kill $smi
