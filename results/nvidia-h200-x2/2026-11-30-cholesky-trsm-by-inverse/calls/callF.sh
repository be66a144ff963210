#!/usr/bin/env bash
# Call F: the final build (the join after a failed enqueue moved into a closure): the
# CUDA test, then one small bench process, both ways of TRSM.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
step small .gpu/cholesky --n 16384 --tile 1024,2048 --gpus 1,2 --trsm inverse,solve --rounds 2 --no-baseline
grep -E "^test |^chariot b|^  chariot|^== " "$L" >> "$S"
