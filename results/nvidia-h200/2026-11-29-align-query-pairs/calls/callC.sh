#!/usr/bin/env bash
# Call C: 1,000 queries of Swiss-Prot-like lengths against the paper-shaped database:
# chariot-align with no flags, with --tabular, and with --gap-open 10 (CUDASW++'s gap
# convention: its best scores must then equal chariot-align's), against CUDASW++ DPX
# (its half2 kernels ran 12 % slower on this database in call A).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu CS4=.gpu/cs4bin NQ=1000 ROUNDS=3 CS4_KERNELS=dpx TABULAR=1 EXTRA="--gap-open 10" TIMEOUT=150 \
  OUT="$OUT/many" W=/tmp/align-many bash .gpu/align-many-queries.sh > /dev/null 2>&1
echo "many exit $? after $(( $(date +%s) - t0 )) s"
sed -n '/== medians/,$p' "$OUT/many/many.log"
grep -E "queries:|makedb|generated" "$OUT/many/many.log"
