#!/usr/bin/env bash
# Call E: the build as committed (TRSMs by the inverse, the default; the operations on
# the path to the next step on a high-priority stream): the CUDA test, then the bench
# alternating --trsm inverse,solve in every round, cuSOLVER potrf in the D = 1 processes.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
step big .gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --trsm inverse,solve --rounds 3 --vectors 1 --csv "$OUT/big.csv"
step small .gpu/cholesky --n 8192,16384 --tile 1024,2048,4096 --gpus 1 --trsm inverse,solve --rounds 3 --csv "$OUT/small.csv"
step big-4096 .gpu/cholesky --n 32768 --tile 4096 --gpus 1 --trsm inverse,solve --rounds 2 --no-baseline --vectors 1 --csv "$OUT/big4096.csv"
grep -E "^== |^  (chariot|cusolver)|^D [0-9]|^[a-z-]+ +[0-9]+ +[0-9]+ +[0-9]+ " "$L" | grep -v "timeline\|GPU [01] ms\|adapted" >> "$S"
