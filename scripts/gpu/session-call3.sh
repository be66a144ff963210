#!/usr/bin/env bash
# Third call of the recorded-graphs campaign, on one GPU: the Python package's GPU tests
# and loop bench (scripts/gpu/python-gpu.sh, wheel in .gpu/wheels), then chariot-align's
# end-to-end GPU tests but the one over every kernel configuration, then that one as
# long as the call allows (ALL_CONFIGS_S seconds). Writes under $OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/python"
timeout 240 env OUT="$OUT/python" bash scripts/gpu/python-gpu.sh > "$OUT/python.log" 2>&1 || echo "python-gpu exit $?" >> "$OUT/python.log"
(cd .gpu && timeout 200 ./test-chariot-align-end_to_end --include-ignored --test-threads=1 --skip every_kernel_configuration) > "$OUT/align-tests.log" 2>&1 || echo "align tests exit $?" >> "$OUT/align-tests.log"
(cd .gpu && timeout "${ALL_CONFIGS_S:-120}" ./test-chariot-align-end_to_end --ignored --exact every_kernel_configuration_matches_gotoh_on_gpu --nocapture) > "$OUT/align-all-configs.log" 2>&1 || echo "all-configs exit $?" >> "$OUT/align-all-configs.log"
