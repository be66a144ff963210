#!/usr/bin/env bash
# Call H: the GPU tests of the new build (both GPUs visible), then the flow bench's
# per-iteration loop and hand-written graph, new against the build before (1556bba),
# three processes each, alternated.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
OUT=$OUT TESTS=.gpu PROCS=3 bash scripts/gpu/ab-flow.sh old=.gpu/old new=.gpu
