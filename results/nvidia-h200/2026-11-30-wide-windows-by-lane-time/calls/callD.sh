#!/usr/bin/env bash
# Call D (nvidia-h200): how many lanes a wide window takes. The landed rule (call C's) with
# windows of up to 128 lanes (.gpu), 64 (.gpu/w64) and 32 (.gpu/w32), each variant of the
# flow bench (chariot's defaults, then the hand-written graph) in a process of its own,
# alternated 128, 64, 32, 32, 64, 128, 128, 64, 32.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > $W/machine.txt 2>&1
t0=$(date +%s)
turn=0
for v in w128 w64 w32 w32 w64 w128 w128 w64 w32; do
  turn=$((turn + 1)); d=$B; [ $v != w128 ] && d=$B/$v
  for var in chariot graph; do
    timeout 100 $d/flow --variants $var --rounds 9 --csv $W/flow-$v-$var$turn.csv > $W/flow-$v-$var$turn.log 2>&1
    echo "flow $var $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  done
done
cd $W && tar cJf logs.tar.xz *.log *.csv 2>/dev/null; rm -f *.log *.csv
