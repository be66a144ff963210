#!/usr/bin/env bash
# Call A (nvidia-h200-x2): the GPU tests of the new build (the report's reasons: each
# batch's execution and each recorded part's way; the Affine rig's mend), then the flow
# bench's loop and hand-written graph, the build before (601bc90) and the new alternated
# by scripts/gpu/ab-flow.sh (3 processes each); then one process of the new flow bench
# with the recorded graph, the loop and the hand-written graph, for the reasons it prints.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
OUT=$OUT/ab TESTS=.gpu PROCS=3 bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu
timeout 150 .gpu/flow --variants recorded,chariot,graph --rounds 5 > "$OUT/flow-reasons.log" 2>&1
echo "flow reasons exit $?" | tee -a "$OUT/ab/summary.txt"
