#!/usr/bin/env bash
# Call A (nvidia-h200-x2): the GPU tests of the new build (a resident fetch that crosses no
# host link is issued outside the download stage), then the tiled Cholesky at N = 32768,
# D = 1 and 2 (block-cyclic), b = 2048 and 4096, 2 rounds a process: the new runtime (.gpu)
# and the build before (.gpu/old: 7c36322) alternated new, old, old, new, new, old. The
# first process of each writes a Chrome trace a run; trace_gaps.py reads them.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $W/machine.txt 2>&1
t0=$(date +%s)
for t in test-resident test-gpu test-chariot-studies-cholesky; do
  timeout 100 $B/$t --ignored --test-threads 1 > $W/$t.txt 2>&1; rc=$?
  echo "$t exit $rc: $(grep -h 'test result' $W/$t.txt | tr '\n' ' ') at $(( $(date +%s) - t0 )) s" | tee -a $S
done
turn=0
for v in new old old new new old; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  tr=""; [ $turn -le 2 ] && tr="--trace $W/trace-$v"
  timeout 85 $d/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 2048,4096 --rounds 2 --no-baseline --csv $W/chol32-$v-$turn.csv $tr > $W/chol32-$v-$turn.log 2>&1
  echo "cholesky 32k $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
for v in new old; do python3 $B/trace_gaps.py $W/trace-$v/*.json > $W/trace-gaps-$v.txt 2>&1; done
grep -h "D [12] N\|round" $W/chol32-*.log >> $S
cd $W && tar cJf logs.tar.xz *.txt *.log *.csv trace-new trace-old 2>/dev/null; rm -rf trace-new trace-old test-*.txt chol*.csv chol*.log
