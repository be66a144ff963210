#!/usr/bin/env bash
# Call G (nvidia-h200-x2): uploads ranked one flop below their tile's first user. The bench
# with it (.gpu) and without (.gpu/prev: call F's new build) alternated prev, new, new,
# prev at N = 32768, D = 1 and 2, b = 2048 and 4096, 2 rounds, each with cuSOLVER potrf
# at D = 1; the first new process writes a Chrome trace a run.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s); turn=0
for v in prev new new prev; do
  turn=$((turn + 1)); d=$B; [ $v = prev ] && d=$B/prev
  tr=""; [ $turn = 2 ] && tr="--trace $W/trace"
  timeout 140 $d/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048,4096 --rounds 2 --csv $W/chol32-$v-$turn.csv $tr > $W/chol32-$v-$turn.log 2>&1
  echo "cholesky 32k $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "D [12] N" $W/chol*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv trace 2>/dev/null; rm -rf trace chol*.csv chol*.log
