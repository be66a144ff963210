#!/usr/bin/env bash
# Call A: the TRSM by the inverse against the solve, tiled Cholesky, alternated in every
# round by the bench (--trsm inverse,solve); cuSOLVER potrf in the D = 1 processes.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
step small .gpu/cholesky --n 8192,16384 --tile 1024,2048,4096 --gpus 1 --trsm inverse,solve --rounds 3 --csv "$OUT/small.csv"
step big-d12 .gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --trsm inverse,solve --rounds 3 --no-baseline --vectors 1 --csv "$OUT/big.csv"
step big-4096 .gpu/cholesky --n 32768 --tile 4096 --gpus 1 --trsm inverse,solve --rounds 2 --vectors 1 --csv "$OUT/big4096.csv"
grep -E "^  (chariot|cusolver)|^D [0-9]|^ *method|^chariot|^[a-z-]+ +[0-9]+ +[0-9]+ +[0-9]+ " "$L" | grep -v "timeline\|GPU [01] ms\|adapted" >> "$S"
