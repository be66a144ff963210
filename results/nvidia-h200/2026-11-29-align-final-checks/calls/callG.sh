#!/usr/bin/env bash
# Call G. Issue 29: the flow bench, three builds alternated, 4 calls each, 5 rounds:
# old (04e543b), new (synchronize sleeps until just before a recorded run's foreseen end,
# then spins; the spin reads the batch's count without its lock), spin (new, with the
# CUDA dispatcher spinning 2 ms before it parks instead of 200 µs: an experiment).
# Issue 30: chariot-align (04e543b) against CUDASW++ 4.0 (prebuilt from its sources) on
# the paper-shaped database, each of the 7 queries and all 7, 3 rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callG; rm -rf "$W"; mkdir -p "$W/ab" "$W/ac"
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
sed -n '/new build: medians/,/geometric means/p' "$OUT/flow-old-new.txt"
sed -n '/new build: medians/,/geometric means/p' "$OUT/flow-old-spin.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls flow-*) || true
OUT=$OUT/singles B=.gpu CS4=.gpu/cs4bin W=/tmp/avc STREAMED=0 ROUNDS=3 timeout 330 bash .gpu/align-vs-cudasw.sh > /dev/null 2>&1
echo "singles exit $? after $(( $(date +%s) - t0 )) s"
sed -n '/== summary/,$p' "$OUT/singles/align-vs-cudasw.log" | grep -v "^  [0-9]" | head -40
(cd "$OUT/singles" && [ -d logs ] && tar czf logs.tgz logs && rm -rf logs)
