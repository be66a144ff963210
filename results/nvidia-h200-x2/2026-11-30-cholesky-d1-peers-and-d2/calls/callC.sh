#!/usr/bin/env bash
# Call C (nvidia-h200-x2): tiled Cholesky at D = 1 (GPU 0) with the new build, against
# CUDASTF's own 07-cholesky example (built here by nvcc from the carried CCCL sources)
# and cuSOLVER potrf (in chariot's processes), alternated: CUDASTF call 1, chariot 1,
# CUDASTF call 2, chariot 2. Then D = 2 on both GPUs, old and new builds alternated
# (old, new, new, old), N = 32768, b = 2048, block-cyclic.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"; B=.gpu; W=/tmp/wC; rm -rf $W; mkdir -p $W
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi topo -m; lscpu | grep -E "Model name|^CPU\(s\)"; } > $OUT/machine.txt 2>&1
t0=$(date +%s)
W=/tmp/fp OUT=$W/build STEPS=build bash scripts/gpu/flow-peers.sh > $W/build.log 2>&1
echo "build exit $? at $(( $(date +%s) - t0 )) s: $(grep stf-cholesky $W/build/build.txt)" | tee -a $S
CHOL="8192:512 8192:1024 8192:2048 16384:1024 16384:2048 16384:4096 32768:1024 32768:2048 32768:4096"
for i in 1 2; do
  CUDA_VISIBLE_DEVICES=0 W=/tmp/fp OUT=$W/stf$i STEPS=cholesky CHOL="$CHOL" CHOL_CALLS=1 timeout 150 bash scripts/gpu/flow-peers.sh > $W/stf$i.log 2>&1
  echo "stf call $i exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S; cat $W/stf$i/cholesky.txt >> $S
  CUDA_VISIBLE_DEVICES=0 timeout 150 $B/cholesky --n 8192,16384,32768 --tile 1024,2048,4096 --copies overlapped,apart --rounds 2 --csv $W/chol-d1-$i.csv > $W/chol-d1-$i.log 2>&1
  echo "chariot D=1 call $i exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S; sed -n '/^medians/,$p' $W/chol-d1-$i.log >> $S
done
k=0
for v in old new new old; do
  d=$B; [ $v = old ] && d=$B/old; k=$((k+1))
  timeout 60 $d/cholesky --gpus 2 --layouts cyclic --n 32768 --tile 2048 --rounds 2 --no-baseline --csv $W/chol-d2-$k-$v.csv > $W/chol-d2-$k-$v.log 2>&1
  echo "chariot D=2 $v exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
for f in $W/chol-d2-*.log; do echo "== $f"; grep -E "^ +chariot" $f; done >> $S
grep -h "timeline" -B1 $W/chol-*.log > $OUT/timelines.txt
cp /tmp/fp/chol-*.log $W/ 2>/dev/null
(cd $W && tar czf $OUT/logs.tgz *.log *.csv stf1 stf2 build)
