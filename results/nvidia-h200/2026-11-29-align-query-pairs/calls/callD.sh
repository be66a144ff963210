#!/usr/bin/env bash
# Call D: every score chariot-align prints against gotoh_check's scalar Gotoh on the GPU:
# the paper-shaped database with CUDASW++'s 20 queries, then pseudo databases of 1,000,000
# sequences (256: the 20 queries; the others: 144, 1,500 and 5,478), as far as BUDGET_S goes.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
B=.gpu PARTS="paper peak" PEAK_LENS="256 2048 128 512 768 1024" ALLQ_LENS=256 BUDGET_S=270 TIMEOUT=300 \
  OUT="$OUT/check" W=/tmp/align-gotoh-check bash .gpu/align-gotoh-check.sh > /dev/null 2>&1
echo "check exit $? after $(( $(date +%s) - t0 )) s"
tail -25 "$OUT/check/gotoh-check.log"
(cd "$OUT/check" && tar czf logs.tgz logs && rm -rf logs)
