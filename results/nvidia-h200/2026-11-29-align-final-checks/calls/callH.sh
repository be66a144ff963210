#!/usr/bin/env bash
# Call H. Issue 29: the flow bench, three builds alternated, 4 calls each, 5 rounds:
# old (04e543b); new (synchronize sleeps until just before a recorded run's foreseen end
# and spins without the batch's lock; dispatchers of the process's schedulers on
# distinct cores); spin (new, its CUDA dispatcher spinning 2 ms before it parks, not
# 200 µs: an experiment). The runtime's GPU tests of the new build. Issue 30: 1,000
# queries (Python-seeded lengths) against the paper-shaped database, chariot-align of
# the new build with and without --tabular against CUDASW++ 4.0 DPX, 3 rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callH; rm -rf "$W"; mkdir -p "$W/ab" "$W/ac"
t0=$(date +%s)
for i in 1 2 3 4; do
  for b in old new spin; do
    case $b in old) F=.gpu-old/flow;; new) F=.gpu/flow;; spin) F=.gpu-spin/flow;; esac
    timeout 60 $F --rounds 5 --csv "$W/flow-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
echo "flow done after $(( $(date +%s) - t0 )) s"
cp $W/flow-old-*.csv $W/flow-new-*.csv $W/ab/; for f in $W/flow-spin-*.csv; do cp $f $W/ac/$(basename $f | sed 's/spin/new/'); done
cp $W/flow-old-*.csv $W/ac/
python3 .gpu/flow-summary.py "$W/ab" > "$OUT/flow-old-new.txt" 2>&1 || true
python3 .gpu/flow-summary.py "$W/ac" > "$OUT/flow-old-spin.txt" 2>&1 || true
grep "geometric means" "$OUT/flow-old-new.txt" "$OUT/flow-old-spin.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 120 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
B=.gpu CS4=.gpu/cs4bin NQ=1000 ROUNDS=3 CS4_KERNELS=dpx TABULAR=1 TIMEOUT=150 \
  OUT="$OUT/many" W=/tmp/align-many timeout 400 bash .gpu/align-many-queries.sh > /dev/null 2>&1
echo "many exit $? after $(( $(date +%s) - t0 )) s"
sed -n '/== medians/,$p' "$OUT/many/many.log"
grep -E "queries:|makedb|generated" "$OUT/many/many.log"
(cd "$OUT/many" && [ -d logs ] && tar czf logs.tgz logs && rm -rf logs)
