#!/usr/bin/env bash
# Call D: the INVERSE by our leaf kernel and batched GEMMs, every TRSM by the inverse
# (the new build), against the build before (.gpu/before: 5552f7d, the inverse by a TRSM
# against the identity, each step's first TRSM a solve), in processes alternated new,
# before, before, new at N = 32 k (D = 1, 2); the new build alternates --urgent
# path,diagonal within its rounds. The CUDA test first; then 8 k and 16 k at D = 1, new
# and before. cuSOLVER potrf in every D = 1 process.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
BIG="--n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --rounds 2 --vectors 1"
step big-new-1 .gpu/cholesky $BIG --urgent path,diagonal --csv "$OUT/big-new-1.csv"
step big-before-1 .gpu/before/cholesky $BIG --csv "$OUT/big-before-1.csv"
step big-before-2 .gpu/before/cholesky $BIG --csv "$OUT/big-before-2.csv"
step big-new-2 .gpu/cholesky $BIG --urgent path,diagonal --csv "$OUT/big-new-2.csv"
SMALL="--n 8192,16384 --tile 1024,2048 --gpus 1 --rounds 3"
step small-new .gpu/cholesky $SMALL --urgent path,diagonal --csv "$OUT/small-new.csv"
step small-before .gpu/before/cholesky $SMALL --csv "$OUT/small-before.csv"
grep -E "^== |^  (chariot|cusolver)|^D [0-9]|^[a-z-]+ +[0-9]+ +[0-9]+ +[0-9]+ |GPU [01] ms" "$L" | grep -v "adapted" >> "$S"
