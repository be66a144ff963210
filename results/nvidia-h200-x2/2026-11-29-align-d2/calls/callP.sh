#!/usr/bin/env bash
# Call P (nvidia-h200-x2): chariot-align (this session's final build, no flags) against
# CUDASW++ 4.0 (--dpx --uploadFull) on the paper-shaped database with CUDASW++'s 20
# queries together, with both GPUs visible (D = 2) and then GPU 0 alone (D = 1), 3
# rounds each, each run its own process (scripts/gpu/align-peak.sh, PARTS=paper20).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for g in "0,1" "0"; do
  d=d2; [ "$g" = "0" ] && d=d1
  PARTS=paper20 GPUS=$g CS4=.gpu/cs4bin CS4_KERNELS=dpx ROUNDS=3 TIMEOUT=120 W=/tmp/align-peak \
    OUT="$OUT/$d" timeout 420 bash .gpu/align-peak.sh > "$OUT/$d.out" 2>&1
  echo "$d exit $? after $(( $(date +%s) - t0 )) s"
  tail -8 "$OUT/$d/peak.log" 2>/dev/null
  (cd "$OUT/$d" && tar czf logs.tgz logs && rm -rf logs) 2>/dev/null
done
