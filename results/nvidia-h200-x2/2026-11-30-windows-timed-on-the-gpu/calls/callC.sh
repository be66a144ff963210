#!/usr/bin/env bash
# The timed pair's cost: this build (windows untimed by default) against call A's build
# (every window timed on the GPU), the recorded graph and the loop, 8 processes each,
# rotated.
set -euo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
OUT=$OUT/ab PROCS=${PROCS:-8} VARIANTS="recorded chariot" bash scripts/gpu/ab-flow.sh new=.gpu timed=.gpu/timed
