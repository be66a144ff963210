#!/usr/bin/env bash
# Fourth call of the recorded-graphs campaign, on one GPU: the flow bench's peers
# (scripts/gpu/flow-peers.sh: CUDASTF, Taskflow, CUDASTF's Cholesky; fewer calls and
# sizes than its defaults, to fit one call), then the Python package again
# (scripts/gpu/python-gpu.sh). Writes under $OUT/peers and $OUT/python.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/peers" "$OUT/python"
CALLS=${CALLS:-2} ROUNDS=${ROUNDS:-3} CHOL=${CHOL:-"8192:256 16384:512 32768:1024"} CHOL_CALLS=${CHOL_CALLS:-1} \
  OUT="$OUT/peers" timeout 380 bash scripts/gpu/flow-peers.sh > "$OUT/peers.log" 2>&1 || echo "flow-peers exit $?" >> "$OUT/peers.log"
timeout 170 env OUT="$OUT/python" bash scripts/gpu/python-gpu.sh > "$OUT/python.log" 2>&1 || echo "python-gpu exit $?" >> "$OUT/python.log"
