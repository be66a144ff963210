#!/usr/bin/env bash
# Windows timed on the GPU: the new build's GPU tests, then the flow bench's loop, the
# recorded graph and the hand-written graph, old (0192174) and new alternated.
set -euo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
OUT=$OUT/ab TESTS=.gpu PROCS=${PROCS:-5} VARIANTS="chariot graph recorded" bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu
python3 scripts/gpu/flow-summary.py "$OUT/ab" old new > "$OUT/flow-old-new.txt" 2>&1 || true
(cd "$OUT/ab" && tar xJf logs.tar.xz && grep -H "execution:\|recorded graph runs" flow-*.log > ../reasons.txt; rm -f ./*.log ./*.csv) || true
