#!/usr/bin/env bash
# Call F (nvidia-h200-x2): test-replay again after its two wide-window tests were folded
# onto one helper (a52d3cb's tree with that change); its CUDA test runs at D = 1 and 2.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > $W/machine.txt 2>&1
timeout 150 $B/test-replay --include-ignored --test-threads=1 > $W/test-replay.log 2>&1
echo "test-replay exit $?: $(grep -h 'test result' $W/test-replay.log | tr '\n' ' ')" | tee -a $S
grep -h "windows_of_long_tasks\|one CUDA GPU" $W/test-replay.log | tee -a $S
