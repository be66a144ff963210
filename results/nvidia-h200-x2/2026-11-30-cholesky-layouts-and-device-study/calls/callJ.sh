#!/usr/bin/env bash
# Call J (nvidia-h200-x2): the Cholesky's D = 2 layouts (cyclic: columns alternate; tall:
# rows alternate; diagonal: (i + j) mod 2), alternated in each round, with D = 1 and potrf,
# N = 32768 (two processes, the layouts' order reversed in the second) and 16384; then the
# flow bench's tree and independent nodes with the device-graph study and Execution::Device.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $W/machine.txt 2>&1
t0=$(date +%s)
timeout 120 $B/flow --shapes dc,ep --iters 0,1000 --device-graph --chariot-device --variants graph,recorded --rounds 5 --csv $W/flow.csv > $W/flow.log 2>&1
echo "flow exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
turn=0
for lay in cyclic,tall,diagonal diagonal,tall,cyclic; do
  turn=$((turn + 1))
  timeout 170 $B/cholesky --gpus 1,2 --layouts $lay --n 32768 --tile 1024,2048,4096 --rounds 2 --csv $W/chol32-$turn.csv > $W/chol32-$turn.log 2>&1
  echo "cholesky 32k $lay exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
timeout 90 $B/cholesky --gpus 1,2 --layouts tall,diagonal,cyclic --n 16384 --tile 1024,2048 --rounds 3 --csv $W/chol16.csv > $W/chol16.log 2>&1
echo "cholesky 16k exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
timeout 60 $B/test-chariot-studies-cholesky --include-ignored --test-threads=1 > $W/test-cholesky.log 2>&1
echo "test cholesky exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
grep -h -A30 "medians over" $W/chol*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f chol*.csv chol*.log flow.csv
