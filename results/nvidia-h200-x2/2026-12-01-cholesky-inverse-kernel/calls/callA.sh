#!/usr/bin/env bash
# Call A: which tile operations run on the high-priority stream (--urgent path, the
# build before's set; diagonal: also the next diagonal tile's SYRK; panel: also the next
# column's GEMMs and every TRSM), alternated within every round, TRSMs by the inverse;
# the CUDA test (every way against the solve) first; cuSOLVER potrf in the D = 1 processes.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
step big .gpu/cholesky --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --urgent path,diagonal,panel --rounds 3 --vectors 1 --csv "$OUT/big.csv"
step small .gpu/cholesky --n 16384 --tile 1024,2048 --gpus 1 --urgent path,diagonal,panel --rounds 3 --csv "$OUT/small.csv"
grep -E "^== |^  (chariot|cusolver)|^D [0-9]|^[a-z-]+ +[0-9]+ +[0-9]+ +[0-9]+ " "$L" | grep -v "timeline\|GPU [01] ms\|adapted" >> "$S"
