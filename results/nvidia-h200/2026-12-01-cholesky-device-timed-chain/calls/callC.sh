#!/usr/bin/env bash
# Call C (one H200): the cholesky bench (rows uploads, the default at D = 1) with its
# commands timed on the GPU (--device-timing) and a Chrome trace a run: N = 8 k at
# b = 1,024 and 2,048, 16 k at 2,048, 2 rounds; then the same without device timing.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
step() { local name=$1 t=$2; shift 2; echo "== $name $(date +%T)" >> "$OUT/log.txt"
  timeout $t "$@" >> "$OUT/log.txt" 2>&1; echo "== $name exit $? $(date +%T)" | tee -a "$OUT/log.txt" >> "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/machine.txt" 2>&1
step timed8 100 .gpu/cholesky --device-timing --n 8192 --tile 1024,2048 --rounds 2 --trace "$OUT/tr" --csv "$OUT/timed8.csv"
step timed16 100 .gpu/cholesky --device-timing --n 16384 --tile 2048 --rounds 2 --trace "$OUT/tr" --csv "$OUT/timed16.csv"
step host 100 .gpu/cholesky --n 8192,16384 --tile 1024,2048 --rounds 2 --no-baseline --csv "$OUT/host.csv"
( cd "$OUT" && tar cJf traces.tar.xz tr && rm -rf tr )
grep -E "^(chariot|cusolver)|^D 1" "$OUT/log.txt" >> "$OUT/summary.txt"
