#!/usr/bin/env bash
# Call B (nvidia-h200): Q split by first stage (a kernel-first task no longer waits in Q
# behind an upload waiting for the copy engine). The GPU tests of the new build; then
# the old build (.gpu/old: the build before, same bench code) and the new alternated,
# two turns: tiled Cholesky D = 1 (copies overlapped, potrf beside it in every process)
# and GrCUDA's image DAG stream (chariot alone).
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"; B=.gpu; W=/tmp/wB; rm -rf $W; mkdir -p $W
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
S=$OUT/summary.txt
{ date -u; nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; } > $OUT/machine.txt 2>&1
t0=$(date +%s)
for t in test-gpu test-resident test-replay test-recorded test-chariot-studies-cholesky test-chariot-studies-images; do
  timeout 150 $B/$t --ignored --test-threads 1 > $W/$t.txt 2>&1; rc=$?
  echo "$t exit $rc: $(grep -E '^test result' $W/$t.txt | tail -1) at $(( $(date +%s) - t0 )) s" | tee -a $S
done
for turn in 1 2; do
  for v in old new; do
    [ $turn = 2 ] && v=$([ $v = old ] && echo new || echo old)
    d=$B; [ $v = old ] && d=$B/old
    timeout 150 $d/cholesky --n 8192,16384,32768 --tile 2048,4096 --rounds 2 --csv $W/chol-$v-$turn.csv > $W/chol-$v-$turn.log 2>&1
    echo "cholesky $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
    timeout 100 $d/images --variants chariot --rounds 3 --csv $W/img-$v-$turn.csv > $W/img-$v-$turn.log 2>&1
    echo "images $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  done
done
for f in $W/chol-*.log; do echo "== $f"; sed -n '/^medians/,$p' $f; done >> $S
for f in $W/img-*.log; do echo "== $f"; tail -6 $f; done >> $S
grep -h "timeline" -B1 $W/chol-*.log > $OUT/timelines.txt
(cd $W && tar czf $OUT/logs.tgz *.log *.csv *.txt)
