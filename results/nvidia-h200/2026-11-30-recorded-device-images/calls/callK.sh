#!/usr/bin/env bash
# Call K (nvidia-h200): a recorded part run on the device again keeps its image on the GPU
# (a reset of its counters and a launch, by the caller where the dispatcher waits). GPU
# tests of the new build, then the flow bench's hand-written graph and recorded graph,
# the build before (old) and the new alternated old, new, new, old, a process each.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s)
timeout 150 $B/test-recorded --include-ignored --test-threads=1 --nocapture > $W/test-recorded.log 2>&1
echo "test-recorded exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
timeout 150 $B/test-replay --include-ignored --test-threads=1 > $W/test-replay.log 2>&1
echo "test-replay exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
timeout 150 $B/test-gpu --include-ignored --test-threads=1 > $W/test-gpu.log 2>&1
echo "test-gpu exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
turn=0
for v in old new new old; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  timeout 100 $d/flow --variants graph,recorded --rounds 5 --csv $W/flow-$v-$turn.csv > $W/flow-$v-$turn.log 2>&1
  echo "flow $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
grep -h "test result" $W/test-*.log >> $S
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f flow-*.log test-*.log
