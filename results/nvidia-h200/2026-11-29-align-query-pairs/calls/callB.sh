#!/usr/bin/env bash
# Call B: CUDASW++'s peak set-up at 768, 1,024 and 2,048: chariot-align (query pairs, the
# default), chariot-align --query-pairs no, CUDASW++ DPX (its half2 ran slower at 2,048 and
# at 128-512 in this session's call A).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu CS4=.gpu/cs4bin VARIANTS="new nopairs" CS4_KERNELS="dpx" PARTS=peak PEAK_LENS="768 1024 2048" ROUNDS=3 \
  OUT="$OUT/peak" W=/tmp/align-peak bash .gpu/align-peak.sh > /dev/null 2>&1
echo "peak exit $? after $(( $(date +%s) - t0 )) s"
tar czf "$OUT/peak-logs.tgz" -C "$OUT/peak" logs && rm -rf "$OUT/peak/logs"
sed -n '/== medians/,$p' "$OUT/peak/peak.log"
