#!/usr/bin/env bash
# Call I (nvidia-h200-x2): the uploads dealt to the GPUs in turn (`--layouts dealt`) against
# block-cyclic uploads on each tile's owner (`cyclic`), alternated within every round by the
# bench, with D = 1 in the same process: N = 32768, b = 2048 and 4096, 2 rounds, two processes.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s)
for p in 1 2; do
  tr=""; [ $p = 1 ] && tr="--trace $W/trace"
  timeout 200 .gpu/cholesky --gpus 1,2 --layouts cyclic,dealt --n 32768 --tile 2048,4096 --rounds 2 --no-baseline --csv $W/chol-$p.csv $tr > $W/chol-$p.log 2>&1
  echo "cholesky process $p exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "D [12] N\|^chariot" $W/chol-*.log >> $S
cd $W && tar cJf logs.tar.xz chol-* trace 2>/dev/null; rm -rf trace chol-*
