#!/usr/bin/env bash
# Call A (one H200): the uploads row by row and the readbacks held until 30 % of the
# uploads, against today's (first use, eager), alternated within each round, D = 1,
# cuSOLVER potrf in each process; two processes with the variants' order reversed;
# then N = 32 k; then the CUDA test.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
step() { local name=$1 t=$2; shift 2; echo "== $name $(date +%T)" >> "$OUT/log.txt"
  timeout $t "$@" >> "$OUT/log.txt" 2>&1; echo "== $name exit $? $(date +%T)" | tee -a "$OUT/log.txt" >> "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/machine.txt" 2>&1
step p1 150 .gpu/cholesky --n 8192,16384 --tile 512,1024,2048 --uploads first-use,rows --readbacks-after 0,0.3 --rounds 3 --csv "$OUT/p1.csv"
step p2 150 .gpu/cholesky --n 8192,16384 --tile 512,1024,2048 --uploads rows,first-use --readbacks-after 0.3,0 --rounds 3 --csv "$OUT/p2.csv"
step p3 150 .gpu/cholesky --n 32768 --tile 2048 --uploads first-use,rows --readbacks-after 0,0.3 --rounds 2 --csv "$OUT/p3.csv"
step test 80 .gpu/test-cholesky --ignored --test-threads 1 on_cuda
grep -E "^(chariot|cusolver)|^D 1" "$OUT/log.txt" >> "$OUT/summary.txt"
