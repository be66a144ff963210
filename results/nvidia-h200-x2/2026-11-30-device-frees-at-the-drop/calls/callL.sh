#!/usr/bin/env bash
# Call L: does the online adaptation's state carry a slower D = 2 Cholesky into later rounds?
# Four processes alternated adapt on, off, off, on; each N = 32 k, b = 2,048, D = 1 then 2,
# three rounds, no cuSOLVER baseline, one residual vector.
set -u
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > "$OUT/machine.txt" 2>&1
i=0
for a in true false false true; do
  i=$((i+1))
  timeout 140 .gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --rounds 3 --no-baseline --vectors 1 \
    --adapt $a --csv "$OUT/chol-$i-adapt-$a.csv" > "$OUT/chol-$i-adapt-$a.log" 2>&1
  echo "process $i adapt $a exit $?" >> "$OUT/exits.txt"
done
