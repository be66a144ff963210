#!/usr/bin/env bash
# Call B: every score of the 20 queries (one query pair of two runs of 10) against
# gotoh_check's scalar Gotoh on pseudo databases of 1,000,000 sequences of 256 and 128;
# then CUDASW++'s peak set-up at 128, 256, 512, 768 and the paper-shaped database with its
# 20 queries: chariot-align new (the default), old (the previous build, on paper20 only:
# peak rows at 2,048 and 1,024 in call A), CUDASW++ DPX and half2.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu PARTS=peak PEAK_LENS="256 128" ALLQ_LENS="256 128" TIMEOUT=150 \
  OUT="$OUT/check" W=/tmp/align-gotoh-check timeout 200 bash .gpu/align-gotoh-check.sh > /dev/null 2>&1
echo "check exit $? after $(( $(date +%s) - t0 )) s"
tail -6 "$OUT/check/gotoh-check.log"
(cd "$OUT/check" && tar czf logs.tgz logs && rm -rf logs)
rm -rf /tmp/align-gotoh-check
B=.gpu CS4=.gpu/cs4bin VARIANTS="new" CS4_KERNELS="dpx half2" PARTS=peak PEAK_LENS="128 256 512" ROUNDS=3 \
  OUT="$OUT/peak" W=/tmp/align-peak timeout 160 bash .gpu/align-peak.sh > /dev/null 2>&1
echo "peak exit $? after $(( $(date +%s) - t0 )) s"
B=.gpu CS4=.gpu/cs4bin VARIANTS="new" CS4_KERNELS="dpx" PARTS=peak PEAK_LENS="768" ROUNDS=3 \
  OUT="$OUT/peak768" W=/tmp/align-peak timeout 80 bash .gpu/align-peak.sh > /dev/null 2>&1
echo "peak768 exit $? after $(( $(date +%s) - t0 )) s"
B=.gpu CS4=.gpu/cs4bin VARIANTS="new old" CS4_KERNELS="dpx half2" PARTS=paper20 ROUNDS=3 \
  OUT="$OUT/paper20" W=/tmp/align-peak timeout 150 bash .gpu/align-peak.sh > /dev/null 2>&1
echo "paper20 exit $? after $(( $(date +%s) - t0 )) s"
for d in peak peak768 paper20; do
  [ -d "$OUT/$d/logs" ] && tar czf "$OUT/$d-logs.tgz" -C "$OUT/$d" logs && rm -rf "$OUT/$d/logs"
  sed -n '/== medians/,$p' "$OUT/$d/peak.log"
done
