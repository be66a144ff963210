#!/usr/bin/env bash
# Call D (one H200): the tile POTRF kernel. The study's CUDA test (every way's factor
# checked and compared), then the cholesky bench with --potrf cusolver,kernel
# alternated in each round at N = 8 k and 16 k (b = 1,024, 2,048), two processes in
# opposite orders, cuSOLVER potrf in each; N = 32 k; a device-timed trace at 8 k.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
step() { local name=$1 t=$2; shift 2; echo "== $name $(date +%T)" >> "$OUT/log.txt"
  timeout $t "$@" >> "$OUT/log.txt" 2>&1; echo "== $name exit $? $(date +%T)" | tee -a "$OUT/log.txt" >> "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/machine.txt" 2>&1
step test 120 .gpu/test-cholesky --ignored --test-threads 1 --nocapture on_cuda
step p1 150 .gpu/cholesky --n 8192,16384 --tile 1024,2048 --potrf cusolver,kernel --rounds 3 --csv "$OUT/p1.csv"
step p2 150 .gpu/cholesky --n 8192,16384 --tile 1024,2048 --potrf kernel,cusolver --rounds 3 --csv "$OUT/p2.csv"
step p3 120 .gpu/cholesky --n 32768 --tile 2048 --potrf cusolver,kernel --rounds 2 --csv "$OUT/p3.csv"
step timed 60 .gpu/cholesky --device-timing --n 8192 --tile 1024 --potrf cusolver,kernel --rounds 1 --no-baseline --trace "$OUT/tr"
( cd "$OUT" && tar cJf traces.tar.xz tr && rm -rf tr )
grep -E "^(chariot|cusolver)|^D 1|chariot b |test result|panicked" "$OUT/log.txt" >> "$OUT/summary.txt"
