#!/usr/bin/env bash
# Call A: the GPU tests (every score of the three kernels against Gotoh, query pairs of
# runs of up to 5 queries among them), then CUDASW++'s peak set-up at 2,048 and 1,024:
# chariot-align with runs of queries (new, the default), the previous build with query
# pairs of one query a half (old), CUDASW++ DPX.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
(cd .gpu && timeout 260 ./test-chariot-align-end_to_end --ignored --test-threads=1) > "$OUT/gpu-test.log" 2>&1
echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gpu-test.log"
tail -3 "$OUT/gpu-test.log"
B=.gpu CS4=.gpu/cs4bin VARIANTS="new old" CS4_KERNELS="dpx" PARTS=peak PEAK_LENS="2048 1024" ROUNDS=3 \
  OUT="$OUT/peak" W=/tmp/align-peak timeout 300 bash .gpu/align-peak.sh > /dev/null 2>&1
echo "peak exit $? after $(( $(date +%s) - t0 )) s"
tar czf "$OUT/peak-logs.tgz" -C "$OUT/peak" logs && rm -rf "$OUT/peak/logs"
sed -n '/== medians/,$p' "$OUT/peak/peak.log"
