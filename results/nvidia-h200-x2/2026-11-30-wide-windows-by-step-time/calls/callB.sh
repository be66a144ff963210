#!/usr/bin/env bash
# Calls B (nvidia-h200-x2, S = 32 there) and C (nvidia-h200, S = 16): the wide-window
# rule measured by GPU time a step (the windows' GPU time over their depths) in place of
# lane time a task (their GPU time times their lanes over their tasks), against the build
# before (d3cb30a): the flow bench's per-iteration loop and hand-written graph, each in a
# process of its own, the builds alternated by scripts/gpu/ab-flow.sh, five processes
# each; with TESTS=1 first the new build's GPU tests.
set -euo pipefail
: "${OUT:?}"
if [ "${TESTS:-0}" = 1 ]; then
  OUT=$OUT/ab TESTS=.gpu PROCS=5 bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu
else
  OUT=$OUT/ab PROCS=5 bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu
fi
