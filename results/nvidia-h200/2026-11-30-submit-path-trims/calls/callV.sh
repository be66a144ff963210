#!/usr/bin/env bash
# Call V (nvidia-h200): the final build (40c68c5: every trim, ended tasks emptied before the
# spare lists are locked) against the build before (old, 2e7c2c5): its GPU tests, then
# the flow bench's per-iteration loop
# (chariot's defaults) and the hand-written graph, each variant in a process of its own,
# the build before (old, 2e7c2c5) and the new alternated old, new, new, old, old, new, ...;
# then the submit probe (200 batches a process on CUDA, Execution::Auto) the same way.
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
for v in old new new old old new; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  for sh in "lc 1024" "ep 1024" "dc 10" "mr 64" "dag 32" "rnd 1024"; do
    timeout 60 $d/submit_probe cuda $sh auto 200 >> $W/submit-$v.txt 2>&1
  done
  echo "probe $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "test result" $W/test-*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f *.log *.csv
