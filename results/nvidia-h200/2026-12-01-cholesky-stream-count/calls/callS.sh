#!/usr/bin/env bash
# Call S (one H200): the committed build (8cd3285) at N = 8 k and 16 k, D = 1, b = 1,024
# and 2,048, with S = 16 (chariot's default), 8, 4 and 32 streams, a process each, in
# that order, cuSOLVER potrf in each, 3 rounds.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for s in 16 8 4 32; do
  echo "== S $s" >> "$OUT/log.txt"
  timeout 100 .gpu/cholesky --n 8192,16384 --tile 1024,2048 --streams $s --rounds 3 --csv "$OUT/s$s.csv" >> "$OUT/log.txt" 2>&1
  echo "== S $s exit $?" >> "$OUT/log.txt"
done
