#!/usr/bin/env bash
# The multi-GPU overhead study on nvidia-h200-x2, run on the GPU machine from
# the repository root, with the binaries staged in $B (default .gpu-multigpu/):
#   overhead  the study (cargo build --release --bench overhead), stripped
#   test-gpu  the GPU test binary (cargo test --release --test gpu --no-run), stripped
#
#   bash scripts/gpu/multi-gpu-study.sh          # the campaign (about 6 minutes)
#   bash scripts/gpu/multi-gpu-study.sh smoke    # a check that everything runs (under a minute)
#
# Steps: machine info; the study at D = 1, 2 on CUDA (chariot S × order, pinned and
# unpinned dispatchers at r = 10, B default, calibrated and 1, the one-GPU baselines at
# D = 1 and the static split at D = 2, every output checked); the sim's prediction of
# the same runs from the rates measured in them, at D = 1, 2 and sim-only at D = 4, 8;
# the GPU test that retires a GPU on a sticky error. Everything lands in
# $OUT/multigpu-study.tgz; the logs also lie loose in $OUT.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0   # chariot uses no NCCL; never NVLink multicast on shared machines
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu-multigpu}
W=/tmp/multigpu-study
rm -rf "$W" && mkdir -p "$W/cuda" "$W/sim"
{
  date -u
  nvidia-smi -L
  nvidia-smi topo -m
  nvidia-smi --query-gpu=index,name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv
  echo "cpus: $(nproc)"
} > "$W/machine.txt" 2>&1

if [ "${1:-}" = smoke ]; then
  GRID=(--chunks 8 --ratios 10 --sizes random --seeds 1 --streams 4 --orders lf --depths 2)
  T_CUDA=30 T_SIM=15 T_TEST=10
else
  GRID=(--ratios 0.1,1,10,100 --sizes fixed,random --seeds 1,2 --streams 2,4,8 --orders fcfs,lf --depths 2)
  T_CUDA=330 T_SIM=150 T_TEST=60
fi
STUDY=("${GRID[@]}" --pin on,off --pin-ratios 10 --buses default,calibrated,1)

echo "== the study on CUDA, D = 1, 2"
timeout "$T_CUDA" "$B/overhead" --backend cuda --gpus 1,2 "${STUDY[@]}" --out "$W/cuda" 2>&1 \
  | tr '\r' '\n' | grep -v ' runs, ' > "$W/cuda/study.log" || true
echo "== the sim's prediction, D = 1, 2, 4, 8"
if [ -s "$W/cuda/sim-args.txt" ]; then
  # shellcheck disable=SC2046  # the file holds the options, split on purpose
  timeout "$T_SIM" "$B/overhead" --backend sim $(cat "$W/cuda/sim-args.txt") --gpus 1,2,4,8 "${STUDY[@]}" \
    --predict-from "$W/cuda/overhead.csv" --out "$W/sim" 2>&1 | tr '\r' '\n' | grep -v ' runs, ' > "$W/sim/study.log" || true
fi
echo "== GPU test: a sticky error retires one GPU and its tasks move to the other"
(cd "$B" && timeout "$T_TEST" ./test-gpu cuda_sticky_error_moves_tasks_to_the_other_gpu --exact --include-ignored \
  --nocapture) > "$W/sticky-test.log" 2>&1 && rc=0 || rc=$?
echo "exit status: $rc" >> "$W/sticky-test.log"

tar czf "$OUT/multigpu-study.tgz" -C "$W" . || true
cp "$W/machine.txt" "$OUT/machine.txt" || true
cp "$W/cuda/study.log" "$OUT/cuda-study.log" || true
[ -f "$W/sim/study.log" ] && cp "$W/sim/study.log" "$OUT/sim-study.log" || true
cp "$W/sticky-test.log" "$OUT/sticky-test.log" || true
tail -n 70 "$W/cuda/study.log" || true
tail -n 25 "$W/sim/study.log" 2>/dev/null || true
tail -n 6 "$W/sticky-test.log" || true
