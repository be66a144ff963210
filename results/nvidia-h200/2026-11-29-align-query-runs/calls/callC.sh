#!/usr/bin/env bash
# Call C: 1,000 queries of Swiss-Prot-like lengths against the paper-shaped database:
# chariot-align with no flags and with --tabular, against CUDASW++ DPX.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu CS4=.gpu/cs4bin NQ=1000 ROUNDS=3 CS4_KERNELS=dpx TABULAR=1 TIMEOUT=150 \
  OUT="$OUT/many" W=/tmp/align-many timeout 560 bash .gpu/align-many-queries.sh > /dev/null 2>&1
echo "many exit $? after $(( $(date +%s) - t0 )) s"
sed -n '/== medians/,$p' "$OUT/many/many.log"
grep -E "queries:|makedb|generated" "$OUT/many/many.log"
(cd "$OUT/many" && [ -d logs ] && tar czf logs.tgz logs && rm -rf logs)
