#!/usr/bin/env bash
# The CUDASW++ comparison probe on the GPU machine: chariot-align's chunk slots (pinned host memory, one
# largest chunk each) against its start and its search: q127, q255 and the 7 queries
# at several --slots, twice each, alternated; process time, search GCUPS and the start.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${B:-.gpu}; W=/tmp/probe; mkdir -p $W
[ -s $W/db.cadb ] || { $B/chariot-align generate --sequences 536000 --out $W/db.fa --queries-out $W/q.fa > /dev/null 2>&1
  awk -v w="$W" '/^>/{f=w "/q-" substr($1, 2) ".fa"} {print > f}' $W/q.fa || true
  $B/chariot-align makedb -d $W/db.fa -o $W/db.cadb --no-progress > /dev/null 2>&1; } || true
run() { # label args...
  local l=$1; shift; t0=$(date +%s.%N); "$@" > $W/out.log 2>&1 || true; t1=$(date +%s.%N)
  echo "$l process $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.3f", b-a}') s | $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' $W/out.log | head -1) | $(grep -m1 -oE 'startup [0-9.]+ s' $W/out.log)"
}
S="$B/chariot-align search -d $W/db.cadb --no-progress --top 10"
run warm $S -q $W/q-q63.fa
for i in 1 2; do
  for slots in ${SLOTS:-20 24 28 32 40 48}; do
    for q in q127 q255; do run "$q slots $slots" $S -q $W/q-$q.fa --slots $slots; done
    run "all7 slots $slots" $S -q $W/q.fa --slots $slots
  done
done
