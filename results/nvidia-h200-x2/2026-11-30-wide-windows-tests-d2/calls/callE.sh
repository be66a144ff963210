#!/usr/bin/env bash
# Call E (nvidia-h200-x2): the new build's GPU tests on two GPUs: test-replay with its CUDA
# test of wide windows run at D = 1 and D = 2 (built from the landed code with that test
# extended to D = 2); test-recorded (its D = 2 tests), test-gpu and test-resident: call C's.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > $W/machine.txt 2>&1
t0=$(date +%s)
for t in test-replay test-recorded test-gpu test-resident; do
  timeout 150 $B/$t --include-ignored --test-threads=1 > $W/$t.log 2>&1
  echo "$t exit $? at $(( $(date +%s) - t0 )) s: $(grep -h 'test result' $W/$t.log | tr '\n' ' ')" | tee -a $S
done
cd $W && tar cJf logs.tar.xz *.log && rm -f *.log
