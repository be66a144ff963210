#!/usr/bin/env bash
# Call K (nvidia-h200-x2): tiled Cholesky at N = 32768 with the readbacks eager (as
# today) and held until their GPU's last upload (`--readbacks after-uploads`), both in
# every round, their order swapped process by process; D = 1 and 2 (block-cyclic),
# b = 2048 and 4096, 3 rounds, four processes, no baseline. The second process writes
# a Chrome trace a run.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; nproc; } > $W/machine.txt 2>&1
t0=$(date +%s)
for p in 1 2 3 4; do
  order=eager,after-uploads; [ $((p % 2)) = 0 ] && order=after-uploads,eager
  tr=""; [ $p = 2 ] && tr="--trace $W/trace"
  timeout 170 $B/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048,4096 --rounds 3 --no-baseline \
    --readbacks $order --csv $W/chol32-$p.csv $tr > $W/chol32-$p.log 2>&1
  echo "cholesky 32k process $p ($order) exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "D [12] N" $W/chol*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv trace 2>/dev/null; rm -rf trace chol*.csv chol*.log
