#!/usr/bin/env bash
# Call F (one H200): the build as committed (454e6be). The CUDA test; then CUDASTF's own
# tiled Cholesky example (07-cholesky.cu, built here by nvcc from the carried CCCL
# sources: scripts/gpu/flow-peers.sh) and chariot's cholesky bench at D = 1 with
# cuSOLVER potrf beside it, alternated: CUDASTF 1, chariot 1, CUDASTF 2, chariot 2, at
# N = 8 k, 16 k, 32 k (CUDASTF at its two best NB of each N in an earlier command;
# chariot at the bench's default tiles, 1,024, 2,048 and 4,096).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"; W=/tmp/wF; rm -rf $W; mkdir -p $W
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
step build env W=$W/fp OUT=$W/build STEPS=build bash scripts/gpu/flow-peers.sh
grep stf-cholesky $W/build/build.txt >> "$S"
CHOL="8192:1024 8192:2048 16384:2048 16384:4096 32768:2048 32768:4096"
for i in 1 2; do
  step stf$i env W=$W/fp OUT=$W/stf$i STEPS=cholesky CHOL="$CHOL" CHOL_CALLS=1 timeout 200 bash scripts/gpu/flow-peers.sh
  cat $W/stf$i/cholesky.txt >> "$S"
  step chariot$i timeout 200 .gpu/cholesky --n 8192,16384,32768 --rounds 2 --csv "$OUT/chariot-$i.csv"
  sed -n "/== chariot$i:/,\$p" "$L" | sed -n '/^medians/,$p' >> "$S"
done
(cd $W && tar czf "$OUT/stf.tgz" build stf1 stf2)
