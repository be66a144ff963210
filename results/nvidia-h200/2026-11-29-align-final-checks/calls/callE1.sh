#!/usr/bin/env bash
# Call E1 (issue 30, final build 04e543b): the GPU tests of chariot-align end to end
# (every score of the three kernels against Gotoh, runs of queries among them), then
# every score on the paper-shaped database with CUDASW++'s 20 queries against
# gotoh_check's scalar Gotoh on the GPU.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
(cd .gpu && timeout 270 ./test-chariot-align-end_to_end --ignored --test-threads=1) > "$OUT/gpu-test.log" 2>&1
echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gpu-test.log"
tail -4 "$OUT/gpu-test.log"
B=.gpu PARTS="paper" TIMEOUT=280 OUT="$OUT/check" W=/tmp/align-gotoh-check bash .gpu/align-gotoh-check.sh > /dev/null 2>&1
echo "check exit $? after $(( $(date +%s) - t0 )) s"
tail -12 "$OUT/check/gotoh-check.log"
(cd "$OUT/check" && tar czf logs.tgz logs && rm -rf logs)
