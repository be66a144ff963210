#!/usr/bin/env bash
# Call Q: where call P's test-replay crashed: the one test, with a SIGSEGV handler that
# prints the stack (resolved here against the unstripped build).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
LD_PRELOAD=$PWD/.gpu/libsegv.so timeout 120 .gpu/test-replay cuda_replayed_dags_match_host_dispatch --exact --include-ignored --nocapture > "$OUT/q.log" 2>&1
echo "exit $?" >> "$OUT/q.log"
grep "^/proc\|maps" /dev/null
