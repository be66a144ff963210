#!/usr/bin/env bash
# Call C2 (the build with the scratch reset's loads eight at a time): 1,000 queries of
# Swiss-Prot-like lengths against the paper-shaped database: chariot-align with no flags
# and with --tabular, against CUDASW++ DPX; then every score of the same 1,000 queries
# (31 query pairs of runs) over a paper-shaped database of 20,000 sequences against
# gotoh_check's scalar Gotoh on the GPU.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu CS4=.gpu/cs4bin NQ=1000 ROUNDS=3 CS4_KERNELS=dpx TABULAR=1 TIMEOUT=150 \
  OUT="$OUT/many" W=/tmp/align-many timeout 480 bash .gpu/align-many-queries.sh > /dev/null 2>&1
echo "many exit $? after $(( $(date +%s) - t0 )) s"
sed -n '/== medians/,$p' "$OUT/many/many.log" | head -8
grep -E "queries:|makedb|generated" "$OUT/many/many.log"
(cd "$OUT/many" && [ -d logs ] && tar czf logs.tgz logs && rm -rf logs)
G=$OUT/check; mkdir -p "$G"
.gpu/chariot-align generate --sequences 20000 --out /tmp/g20k.fa --quiet
timeout 60 .gpu/chariot-align search -q /tmp/align-many/q.fa -d /tmp/g20k.fa -o /tmp/g20k.tsv > "$G/search.out" 2> "$G/search.err"
echo "search exit $?"; grep -E "kernel dpx|GCUPS" "$G/search.err" | head -3
timeout 90 .gpu/gotoh_check -q /tmp/align-many/q.fa -d /tmp/g20k.fa --scores /tmp/g20k.tsv --backend cuda --cpu-sample 8 > "$G/gotoh_check.out" 2> "$G/gotoh_check.err"
echo "gotoh_check exit $? after $(( $(date +%s) - t0 )) s"; tail -3 "$G/gotoh_check.out"; tail -3 "$G/gotoh_check.err"
