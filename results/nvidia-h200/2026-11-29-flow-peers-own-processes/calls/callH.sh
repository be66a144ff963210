#!/usr/bin/env bash
# Call H: the flow bench's peers built from their sources here (CUDASTF, Taskflow, the
# same hand-written graph by nvcc), then every variant of every program in a process of
# its own (OWN=1), 3 calls of 5 rounds, the processes' order rotating; no Cholesky.
set -uo pipefail
mkdir -p $OUT
OWN=1 STEPS="build flow summary" B=.gpu W=/tmp/flow-peers OUT=$OUT bash scripts/gpu/flow-peers.sh > $OUT/peers.log 2>&1
echo "flow-peers exit $?" >> $OUT/peers.log
