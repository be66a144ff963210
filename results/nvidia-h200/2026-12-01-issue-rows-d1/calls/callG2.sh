#!/usr/bin/env bash
# Call G2 (one H200): tiled Cholesky at D = 1 on today's build: CUDASTF's own example
# (07-cholesky.cu, built by call G1 or here) and chariot's cholesky bench with cuSOLVER
# potrf beside it, alternated: CUDASTF 1, chariot 1, CUDASTF 2, chariot 2, at N = 8 k,
# 16 k, 32 k (CUDASTF at its two best NB of each N; chariot at the bench's default
# tiles 1,024, 2,048 and 4,096, 2 rounds a process, its host copies counted).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"; W="$PWD/.peers/w"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
if [ ! -x "$W/stf-cholesky" ]; then
  step build env W="$W" OUT=/tmp/wG2/build STEPS=build bash scripts/gpu/flow-peers.sh
fi
grep stf-cholesky "$W/build-stf-cholesky.txt" >> "$S" 2>/dev/null
CHOL="8192:1024 8192:2048 16384:2048 16384:4096 32768:2048 32768:4096"
for i in 1 2; do
  step stf$i env W="$W" OUT=/tmp/wG2/stf$i STEPS=cholesky CHOL="$CHOL" CHOL_CALLS=1 timeout 200 bash scripts/gpu/flow-peers.sh
  cat /tmp/wG2/stf$i/cholesky.txt >> "$S"
  step chariot$i timeout 200 .gpu/cholesky --n 8192,16384,32768 --rounds 2 --csv "$OUT/chariot-$i.csv"
  sed -n "/== chariot$i:/,\$p" "$L" | sed -n '/^medians/,$p' >> "$S"
done
(cd /tmp/wG2 && tar czf "$OUT/stf.tgz" stf1 stf2 $( [ -d build ] && echo build ))
