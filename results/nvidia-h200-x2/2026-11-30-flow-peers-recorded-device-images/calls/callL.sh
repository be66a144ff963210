#!/usr/bin/env bash
# Call L (nvidia-h200-x2): the runtime's recorded-graph tests on two GPUs (the new device
# test among them), the same test binary with the kept image's reset left out (it must
# fail), then the flow bench's peers each in a process of its own (OWN=1: CUDASTF,
# Taskflow and nvcc's hand-written graph built here) against this build, on GPU 0.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
t0=$(date +%s)
timeout 120 $B/test-recorded --include-ignored --test-threads=1 --nocapture > $W/test-recorded.log 2>&1
echo "test-recorded exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
timeout 60 $B/test-recorded-mut --include-ignored --test-threads=1 --nocapture cuda_device_runs_again > $W/test-recorded-mut.log 2>&1
echo "test-recorded-mut (the reset left out; must fail) exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
OWN=1 CALLS=${CALLS:-2} STEPS="build flow summary" B=.gpu W=/tmp/flow-peers OUT=$W/peers timeout 450 bash scripts/gpu/flow-peers.sh > $W/peers.log 2>&1
echo "flow-peers exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
grep -h "test result\|panicked\|graphs \[" $W/test-recorded*.log >> $S
