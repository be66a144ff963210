#!/usr/bin/env bash
# Call C: which steps get an inverse. cholesky-m2: every step with two TRSMs or more (as
# committed); cholesky-nt4: steps with at least nt/4 TRSMs; cholesky-nt2: at least nt/2.
# Each process alternates --trsm inverse,solve in every round; the binaries alternate
# m2, nt4, nt2, nt2, nt4, m2. N = 32 k, b = 2,048, D = 1 and 2 (block-cyclic).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for v in m2 nt4 nt2 nt2 nt4 m2; do
  step "$v" .gpu/cholesky-$v --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --trsm inverse,solve --rounds 2 --no-baseline --vectors 1
done
step nt2-4096 .gpu/cholesky-nt2 --n 32768 --tile 4096 --gpus 1 --trsm inverse,solve --rounds 2 --no-baseline --vectors 1
step nt2-small .gpu/cholesky-nt2 --n 8192,16384 --tile 1024,2048 --gpus 1 --trsm inverse,solve --rounds 3 --no-baseline
grep -E "^== |^  chariot" "$L" >> "$S"
