#!/usr/bin/env bash
# Call D: the critical tile operations (POTRF, INVERSE, a step's first TRSM) on a
# high-priority stream of their slot, forked from and joined to the task's stream by
# events (cholesky-prio, a variant), against the build as it is (cholesky-base);
# alternated base, prio, prio, base; each process alternates --trsm inverse,solve.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for v in base prio prio base; do
  step "$v" .gpu/cholesky-$v --n 32768 --tile 2048 --gpus 1,2 --layouts cyclic --trsm inverse,solve --rounds 2 --no-baseline --vectors 1
done
grep -E "^== |^  chariot" "$L" >> "$S"
