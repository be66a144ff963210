#!/usr/bin/env bash
# Call I (one H200): the build of 61dd5af (a held task's predecessors inline; the flow
# bench's loop timed after its warm-up settles). 1. The runtime's GPU tests of the
# replay, recorded-graph and GPU suites. 2. The submit probe (the flow bench's loop on
# one scheduler, 200 batches a process, submit time a task and wall a batch) of the
# build before (c139437, "old") and this one ("new"), alternated old, new, new, old, ...
# for 4 turns over six shapes. 3. The flow shapes against every peer, each variant in a
# process of its own (scripts/gpu/flow-peers.sh, OWN=1, 2 calls of 5 timed rounds).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
shapes="lc:1024 ep:1024 dc:10 mr:64 dag:32 rnd:1024"
for turn in 1 2 3 4; do
  if [ $((turn % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    exe=.gpu/submit_probe; [ $b = old ] && exe=.gpu/submit_probe-old
    for sn in $shapes; do
      timeout 60 $exe --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
t0=$(date +%s)
OWN=1 CALLS=2 ROUNDS=5 STEPS="build flow summary" B=.gpu W="$PWD/.peers/w" OUT="$OUT/peers" bash scripts/gpu/flow-peers.sh > "$OUT/peers.log" 2>&1
echo "flow-peers exit $? in $(( $(date +%s) - t0 )) s" >> "$S"
(cd .peers/w && tar czf "$OUT/peers/logs.tgz" flow-*.csv flow-*.log 2>/dev/null)
