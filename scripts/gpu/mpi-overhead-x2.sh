#!/usr/bin/env bash
# The cluster form on two GPUs of one host: the overhead study (benches/overhead) at r = 1 and
# 10 with chariot's defaults, as 2 ranks x 1 GPU (mpirun, each rank its own GPU)
# against 1 rank x 2 GPUs (one process), alternated; the same binary for both. Then
# the hand-out's protocol alone (benches/cluster_scale/handout_probe.c) at 1, 2, 4 and
# 8 claiming ranks, for the scaling model's service time. The GPU image's own Open MPI
# runs it. Binaries: $B/overhead (built with --features mpi) and $B/handout-probe
# (default B=.gpu-mpi/); writes under $OUT. ROUNDS pairs (default 3), each run
# REPEAT timed batches (default 5). With OLD=DIR, each round also runs the MPI form
# with DIR/overhead (an earlier build), after the new one (old-<round>).
set -euo pipefail
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu-mpi}; ROUNDS=${ROUNDS:-3}; REPEAT=${REPEAT:-5}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; nvidia-smi -L; mpirun --version | head -1; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
args=(--backend cuda --no-grid --no-baselines --ratios 1,10 --sizes fixed,random --repeat "$REPEAT")
for i in $(seq 1 "$ROUNDS"); do
  trace=(); [ "$i" = 1 ] && trace=(--trace)
  timeout 300 "$B/overhead" "${args[@]}" --gpus 2 --out "$OUT/one-$i" > "$OUT/one-$i.txt" 2>&1 && rc=0 || rc=$?
  echo "round $i one process: exit $rc"
  timeout 300 mpirun -np 2 --bind-to none bash -c \
    'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$B/overhead" "${args[@]}" ${trace[@]+"${trace[@]}"} \
    --gpus 1 --out "$OUT/two-$i" > "$OUT/two-$i.txt" 2>&1 && rc=0 || rc=$?
  echo "round $i 2 ranks: exit $rc"
  if [ -n "${OLD:-}" ]; then
    timeout 300 mpirun -np 2 --bind-to none bash -c \
      'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$OLD/overhead" "${args[@]}" \
      --gpus 1 --out "$OUT/old-$i" > "$OUT/old-$i.txt" 2>&1 && rc=0 || rc=$?
    echo "round $i 2 ranks, old build: exit $rc"
  fi
done | tee "$OUT/rounds.txt" || true
[ "${PROBE:-1}" = 0 ] && exit 0
for n in 2 3 5 9; do
  echo "\$ mpirun -np $n handout-probe 20000"
  timeout 60 mpirun -np "$n" --bind-to none "$B/handout-probe" 20000 2>&1 | tail -n "$n" || true
done | tee "$OUT/handout-probe.txt" || true
