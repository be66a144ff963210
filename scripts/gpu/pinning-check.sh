#!/usr/bin/env bash
# The dispatcher's core choice (results/nvidia-h100-x1/final/, end-of-session checks):
# the old binary (.gpu/chariot, dispatcher on core 0) and the new one (.gpu/chariot-hi,
# the highest-numbered free core) alternated three times each, S in {3, 4}, depth in
# {1, 2}; prints T for each. Run on the GPU machine from the repository root.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for b in chariot chariot-hi chariot chariot-hi chariot chariot-hi; do
  echo "== $b"; .gpu/$b --streams 3,4 --depths 1,2 --iters 450 2>&1 | sed -n 8,11p | awk '{print $1, $2, $3, $6, $9}' || true
done
