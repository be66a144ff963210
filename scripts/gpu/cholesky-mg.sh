#!/usr/bin/env bash
# Tiled Cholesky at D = 2 against cuSOLVER's multi-GPU potrf (cusolverMg), in one command
# on a two-GPU machine (nvidia-h200-x2). Builds probes/cusolvermg_potrf.cu with nvcc here,
# then $CALLS times alternates two processes: cusolverMg on both GPUs at each column tile
# of $MG_TILES, $ROUNDS rounds (upload from pinned memory, factor, download, each timed;
# the factor checked on random vectors), and chariot's cholesky bench ($B/cholesky, no
# flags but the sizes; its host copies counted both ways, its factor checked) at D = 1
# and 2 with the tiles of $TILES, the block-cyclic layout, cuSOLVER's single-GPU potrf
# beside it at D = 1, $ROUNDS rounds. The same matrix (seed 1) everywhere, N = $N, FP64.
#
#   OUT=$OUT bash scripts/gpu/cholesky-mg.sh       # kind nvidia-h200-x2, carry .gpu
#   bash scripts/gpu/cholesky-mg.sh --help
#
# Knobs: N (32768), TILES (1024,2048), MG_TILES (256 1024), ROUNDS (3), CALLS (2), B (.gpu),
# NVCC (nvcc on PATH, else /usr/local/cuda/bin/nvcc). Writes under $OUT: mg.log (every
# cusolverMg line), chariot-CALL.log and chariot-CALL.csv (the bench's own), summary.txt.
set -euo pipefail
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
: "${OUT:?set OUT to a directory}"
N=${N:-32768}; TILES=${TILES:-1024,2048}; MG_TILES=${MG_TILES:-"256 1024"}; ROUNDS=${ROUNDS:-3}; CALLS=${CALLS:-2}
B=${B:-.gpu}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
SRC=$(cd "$(dirname "$0")" && pwd)/probes/cusolvermg_potrf.cu
mkdir -p "$OUT"; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"; } > "$S" 2>&1
t0=$(date +%s)
# cusolverMg's API is marked deprecated in recent toolkits: its warnings are left out.
"$NVCC" -O3 -arch=sm_90 -Xcompiler -fopenmp,-Wno-deprecated-declarations "$SRC" -lcusolverMg \
  -o /tmp/cusolvermg_potrf 2>&1 | tee -a "$S"
echo "built cusolverMg's potrf in $(( $(date +%s) - t0 )) s" | tee -a "$S"
for r in $(seq 1 "$CALLS"); do
  for t in $MG_TILES; do
    { CUDA_VISIBLE_DEVICES=0,1 timeout 240 /tmp/cusolvermg_potrf "$N" "$t" "$ROUNDS" 1 || echo "cusolverMg tile $t exit $?"; } \
      | sed "s/^/call $r: /" | tee -a "$OUT/mg.log"
  done
  CUDA_VISIBLE_DEVICES=0,1 timeout 300 "$B/cholesky" --n "$N" --tile "$TILES" --gpus 1,2 --layouts cyclic \
    --rounds "$ROUNDS" --csv "$OUT/chariot-$r.csv" > "$OUT/chariot-$r.log" 2>&1 || echo "chariot call $r exit $?"
  grep -E "^ +(chariot|cusolver)" "$OUT/chariot-$r.log" || true
  echo "call $r done after $(( $(date +%s) - t0 )) s"
done 2>&1 | tee -a "$S"
