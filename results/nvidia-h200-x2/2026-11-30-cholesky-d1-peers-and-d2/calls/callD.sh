#!/usr/bin/env bash
# Call D (nvidia-h200-x2): the new build's tiled Cholesky at D = 1 and 2 in one process
# (block-cyclic at 2), N = 32768, b = 2048 and 4096, 2 rounds: which tile D = 2 wants now.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; } > $OUT/machine.txt 2>&1
timeout 150 .gpu/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048,4096 --rounds 2 --no-baseline --csv $OUT/chol-d12.csv > $OUT/chol-d12.log 2>&1
echo "exit $?" >> $OUT/chol-d12.log
