#!/usr/bin/env bash
# Windows timed on the GPU only with device_timing: the final build's GPU tests, then the
# flow bench's loop, recorded graph and hand-written graph: old (0192174), new (this
# build, untimed by default) and timed (call A's build, every window timed), rotated.
set -euo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
OUT=$OUT/ab TESTS=.gpu PROCS=${PROCS:-3} VARIANTS="chariot graph recorded" bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu timed=.gpu/timed
