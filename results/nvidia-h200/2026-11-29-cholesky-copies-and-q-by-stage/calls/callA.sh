#!/usr/bin/env bash
# Call A (nvidia-h200): where chariot's D = 1 tiled Cholesky time goes, beside cuSOLVER
# potrf in the same processes (alternated round by round): N = 8k, 16k, 32k, each with
# its copies overlapped (timed) and apart (the factorisation alone), three rounds; then
# S = 4, 8, 32 and the FCFS order at N = 32k, b = 2048 (S default is in the logs).
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"; B=.gpu; W=/tmp/wA; rm -rf $W; mkdir -p $W
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; lscpu | grep -E "Model name|^CPU\(s\)"; free -g | head -2; } > $OUT/machine.txt 2>&1
t0=$(date +%s)
timeout 120 $B/test-chariot-studies-cholesky --ignored --test-threads 1 --nocapture > $W/test-cholesky.txt 2>&1; echo "cholesky GPU test exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
for spec in 8192:512,1024,2048 16384:1024,2048,4096 32768:1024,2048,4096; do
  N=${spec%%:*}; T=${spec#*:}
  timeout 170 $B/cholesky --n $N --tile $T --copies overlapped,apart --rounds 3 --csv $W/chol-$N.csv > $W/chol-$N.log 2>&1
  echo "N $N exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  sed -n '/^medians/,$p' $W/chol-$N.log >> $S
done
for v in "--streams 4" "--streams 8" "--streams 32" "--order fcfs"; do
  tag=$(echo "$v" | tr -d ' -')
  timeout 80 $B/cholesky --n 32768 --tile 2048 $v --copies overlapped,apart --rounds 2 --no-baseline --csv $W/chol-$tag.csv > $W/chol-$tag.log 2>&1
  echo "$v exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
  sed -n '/^medians/,$p' $W/chol-$tag.log >> $S
done
grep -h "timeline" -B1 $W/chol-*.log > $OUT/timelines.txt
(cd $W && tar czf $OUT/logs.tgz *.log *.csv *.txt)
