#!/usr/bin/env bash
# Call F (nvidia-h200-x2): the GPU tests of the new build (Q places a task by the stage it
# starts at on its GPU), then the tiled Cholesky with the tiles' device memory allocated
# before the clock: the new runtime (.gpu) and the build before (.gpu/old: runtime a38b452,
# this bench) alternated new, old, old, new at N = 32768, D = 1 and 2, b = 2048 and 4096,
# 2 rounds; then each at N = 8192 and 16384, D = 1, with potrf, 3 rounds. The first new
# process writes a Chrome trace a run.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s)
for t in test-gpu test-resident test-replay test-recorded test-chariot-studies-cholesky test-chariot-studies-images; do
  timeout 150 $B/$t --ignored --test-threads 1 > $W/$t.txt 2>&1; rc=$?
  echo "$t exit $rc: $(grep -h 'test result' $W/$t.txt | tr '\n' ' ') at $(( $(date +%s) - t0 )) s" | tee -a $S
done
turn=0
for v in new old old new; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  tr=""; [ $turn = 1 ] && tr="--trace $W/trace"
  timeout 150 $d/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048,4096 --rounds 2 --no-baseline --csv $W/chol32-$v-$turn.csv $tr > $W/chol32-$v-$turn.log 2>&1
  echo "cholesky 32k $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
for v in new old; do
  d=$B; [ $v = old ] && d=$B/old
  timeout 100 $d/cholesky --n 8192,16384 --tile 1024,2048,4096 --rounds 3 --csv $W/chol816-$v.csv > $W/chol816-$v.log 2>&1
  echo "cholesky 8k,16k $v exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "D [12] N" $W/chol*.log >> $S
cd $W && tar cJf logs.tar.xz *.txt *.log *.csv trace 2>/dev/null; rm -rf trace test-*.txt chol*.csv chol*.log
