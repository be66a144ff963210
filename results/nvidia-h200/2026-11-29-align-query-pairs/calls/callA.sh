#!/usr/bin/env bash
# Call A: the GPU tests (the query-pair kernel's scores against Gotoh), then CUDASW++'s peak
# set-up at 128, 256, 512 and the paper-shaped database with its 20 queries: chariot-align
# (query pairs, the default) and chariot-align --query-pairs no, CUDASW++ DPX and half2.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
(cd .gpu && ./test-chariot-align-end_to_end --ignored --test-threads=1) > "$OUT/gpu-test.log" 2>&1
echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gpu-test.log"
tail -3 "$OUT/gpu-test.log"
B=.gpu CS4=.gpu/cs4bin VARIANTS="new nopairs" CS4_KERNELS="dpx half2" PEAK_LENS="128 256 512" ROUNDS=3 \
  OUT="$OUT/peak" W=/tmp/align-peak bash .gpu/align-peak.sh > /dev/null 2>&1
echo "peak exit $? after $(( $(date +%s) - t0 )) s"
tar czf "$OUT/peak-logs.tgz" -C "$OUT/peak" logs && rm -rf "$OUT/peak/logs"
sed -n '/== medians/,$p' "$OUT/peak/peak.log"
