#!/usr/bin/env bash
# Call H (nvidia-h200-x2): a variant, the first column's uploads dealt to both GPUs by
# tile row (--layouts dealt), against the block-cyclic uploads (cyclic), alternated
# within each round, N = 32 k, b = 2,048, D = 2, 4 rounds; then the same once more with
# the order reversed.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
.gpu/cholesky --n 32768 --tile 2048 --gpus 2 --layouts cyclic,dealt --rounds 4 --no-baseline --vectors 1 --csv "$OUT/h1.csv" > "$OUT/log.txt" 2>&1
.gpu/cholesky --n 32768 --tile 2048 --gpus 2 --layouts dealt,cyclic --rounds 4 --no-baseline --vectors 1 --csv "$OUT/h2.csv" >> "$OUT/log.txt" 2>&1
