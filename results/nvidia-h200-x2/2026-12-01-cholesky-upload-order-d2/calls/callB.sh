#!/usr/bin/env bash
# Call B (two H200s): the uploads row by row (now the default) against by first use at
# N = 32 k, b = 2,048, D = 1 and 2 (block-cyclic), alternated within each round, two
# processes with the order reversed, cuSOLVER potrf at D = 1 in each; then cusolverMg
# against chariot with no flags at D = 1 and 2 (scripts/gpu/cholesky-mg.sh); then the
# CUDA test.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
step() { local name=$1 t=$2; shift 2; echo "== $name $(date +%T)" >> "$OUT/log.txt"
  timeout $t "$@" >> "$OUT/log.txt" 2>&1; echo "== $name exit $? $(date +%T)" | tee -a "$OUT/log.txt" >> "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/machine.txt" 2>&1
step p1 150 .gpu/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048 --uploads rows,first-use --rounds 3 --csv "$OUT/p1.csv"
step p2 150 .gpu/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048 --uploads first-use,rows --rounds 3 --csv "$OUT/p2.csv"
OUT2=$OUT/mg; step mg 200 env OUT=$OUT2 N=32768 TILES=2048 MG_TILES=1024 ROUNDS=3 CALLS=1 bash scripts/gpu/cholesky-mg.sh
( cd "$OUT" && tar cJf mg.tar.xz mg && rm -rf mg )
step test 80 .gpu/test-cholesky --ignored --test-threads 1 on_cuda
grep -E "^(chariot|cusolver)|^D [12]" "$OUT/log.txt" >> "$OUT/summary.txt"
