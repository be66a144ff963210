#!/usr/bin/env bash
# Call B (nvidia-h200): the per-iteration loop's windows on lanes past S where the last two
# batches of their structure kept their lanes busy at least 20 µs a task. The new build's
# GPU tests; then the flow bench's per-iteration loop (chariot's defaults) and the
# hand-written graph, each variant in a process of its own, the build before (old,
# 7c36322) and the new alternated old, new, new, old, old, new; then GrCUDA's image DAG
# stream (chariot only), old, new, new, old.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > $W/machine.txt 2>&1
t0=$(date +%s)
for t in test-replay test-recorded test-gpu test-resident; do
  timeout 150 $B/$t --include-ignored --test-threads=1 > $W/$t.log 2>&1
  echo "$t exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
turn=0
for v in old new new old old new; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  for var in chariot graph; do
    timeout 100 $d/flow --variants $var --rounds 9 --csv $W/flow-$v-$var$turn.csv > $W/flow-$v-$var$turn.log 2>&1
    echo "flow $var $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  done
done
turn=0
for v in old new new old; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  timeout 100 $d/images --variants chariot --csv $W/img-$v$turn.csv > $W/img-$v$turn.log 2>&1
  echo "images $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "test result" $W/test-*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f *.log *.csv
