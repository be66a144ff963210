#!/usr/bin/env bash
# Second call of the recorded-graphs campaign, on one GPU: the flow bench of this build
# (its recorded graph left out) against the build before the restructuring, 4 calls
# alternated (the no-cost check of the window lists); the flow bench with the recorded
# graph, 2 calls; the Python package's GPU tests and loop bench (scripts/gpu/python-gpu.sh,
# wheel in .gpu/wheels); chariot-align's end-to-end GPU tests (every kernel configuration
# against Gotoh). Binaries in .gpu/ (new) and .gpu-old/ (old flow). Writes under $OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=/tmp/session-call2; rm -rf "$W"; mkdir -p "$W/nocost" "$W/recorded"
for i in 1 2 3 4; do
  timeout 100 .gpu-old/flow --rounds 3 --csv "$W/nocost/flow-old-$i.csv" > "$W/nocost/flow-old-$i.log" 2>&1 || echo "old $i failed"
  timeout 100 .gpu/flow --no-recorded --rounds 3 --csv "$W/nocost/flow-new-$i.csv" > "$W/nocost/flow-new-$i.log" 2>&1 || echo "new $i failed"
done
python3 scripts/gpu/flow-summary.py "$W/nocost" > "$OUT/flow-nocost.txt" 2>&1 || true
for i in 1 2; do
  timeout 100 .gpu/flow --rounds 3 --csv "$W/recorded/flow-new-$i.csv" > "$W/recorded/flow-new-$i.log" 2>&1 || echo "recorded $i failed"
done
python3 scripts/gpu/flow-summary.py "$W/recorded" > "$OUT/flow-recorded.txt" 2>&1 || true
tar czf "$OUT/flow-csv.tgz" -C "$W" . || true
mkdir -p "$OUT/python"
timeout 240 env OUT="$OUT/python" bash scripts/gpu/python-gpu.sh > "$OUT/python.log" 2>&1 || echo "python-gpu exit $?" >> "$OUT/python.log"
(cd .gpu && timeout 250 ./test-chariot-align-end_to_end --include-ignored --test-threads=1) > "$OUT/align-tests.log" 2>&1 || echo "align tests exit $?" >> "$OUT/align-tests.log"
