#!/usr/bin/env bash
# Call G (nvidia-h200-x2): Chrome traces of the committed build (454e6be) at N = 16 k
# (D = 1, b = 2,048) and 32 k (D = 1 and 2, b = 2,048), 2 rounds, for where the
# kernels stood idle (trace_gaps.py, run here afterwards).
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
.gpu/cholesky --n 16384 --tile 2048 --gpus 1 --rounds 2 --no-baseline --trace /tmp/tr > "$OUT/log.txt" 2>&1
.gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 2 --no-baseline --vectors 1 --trace /tmp/tr >> "$OUT/log.txt" 2>&1
ls -la /tmp/tr >> "$OUT/log.txt"
tar cJf "$OUT/traces.tar.xz" -C /tmp tr
