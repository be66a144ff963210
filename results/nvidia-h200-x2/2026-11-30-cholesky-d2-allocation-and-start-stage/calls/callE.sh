#!/usr/bin/env bash
# Call E (nvidia-h200-x2): where D = 2's time goes. The tiled Cholesky at D = 1 and 2 in one
# process (block-cyclic at 2), N = 32768, b = 1024, 2048, 4096, 1 round, a Chrome trace a run.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT/trace"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > $OUT/machine.txt 2>&1
timeout 200 .gpu/cholesky --gpus 1,2 --layouts cyclic --n 32768 --tile 1024,2048,4096 --rounds 1 --no-baseline --csv $OUT/chol-e.csv --trace $OUT/trace > $OUT/chol-e.log 2>&1
echo "exit $?" >> $OUT/chol-e.log
tar cJf $OUT/trace.tar.xz -C $OUT trace && rm -rf $OUT/trace
