#!/usr/bin/env bash
# Call P (nvidia-h200): the same builds as call O, the flow bench's per-iteration loop with
# one iteration count a process (as a user's loop has its own work a task: the structure
# is learnt at that count), 1,000 and 10,000, and the hand-written graph, the build before
# (old) and the new alternated old, new, new, old.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s)
turn=0
for v in old new new old; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  for it in 10000 1000; do
    timeout 100 $d/flow --variants chariot --iters $it --rounds 9 --csv $W/flow-$v-chariot$it-$turn.csv > $W/flow-$v-chariot$it-$turn.log 2>&1
    echo "flow chariot $it $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  done
  timeout 100 $d/flow --variants graph --iters 1000,10000 --rounds 9 --csv $W/flow-$v-graph$turn.csv > $W/flow-$v-graph$turn.log 2>&1
  echo "flow graph $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f *.log *.csv
