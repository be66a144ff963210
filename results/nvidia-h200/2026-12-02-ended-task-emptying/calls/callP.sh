#!/usr/bin/env bash
# Call P (one H200): 325dc83 ("old") against the working tree after it ("new": a
# window's node parameters and task ids made at the cut on the submitting thread, so
# that its dispatcher reads none of its tasks unless one fails).
# 1. The new build's GPU tests (replay, recorded graphs, the GPU suite).
# 2. The submit probe of each build, 10 turns alternated, six shapes, 200 batches each.
# 3. The flow bench's loop of each build and its hand-written graph, each in a process
#    of its own, 12 turns, the order rotating.
# 4. The demo with no flags (470 kernel rounds an element, 5 timed runs), old and new
#    alternated, 3 calls each: the pipelines of long tasks as they were.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
shapes="lc:1024 ep:1024 dc:10 mr:64 dag:32 rnd:1024"
for turn in $(seq 1 10); do
  if [ $((turn % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    exe=.gpu/submit_probe; [ $b = old ] && exe=.gpu/submit_probe-old
    for sn in $shapes; do
      timeout 60 $exe --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
F="$OUT/flow"; mkdir -p "$F"
builds=(old new graph)
for turn in $(seq 1 12); do
  for k in 0 1 2; do
    v=${builds[$(( (k + turn) % 3 ))]}
    case $v in
      old) step flow-old-$turn timeout 240 .gpu/flow-old --variants chariot --rounds 5 --csv "$F/old-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
python3 .gpu/submit-builds.py "$OUT" old new > "$OUT/submit-table.txt" 2>&1
python3 .gpu/loop-builds.py "$F" old new > "$OUT/table.txt" 2>&1
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    bin=.gpu/chariot-demo; [ $v = old ] && bin=.gpu/chariot-demo-old
    timeout 120 $bin --iters 470 --repeat 5 > "$OUT/demo-$v-$i.log" 2>&1; rc=$?
    echo "demo $v $i exit $rc: $(grep -E '^ +default ' "$OUT/demo-$v-$i.log" | head -1) | $(grep -m1 -o 'bound check[^(]*' "$OUT/demo-$v-$i.log")" >> "$S"
  done
done
cat "$OUT/submit-table.txt" "$OUT/table.txt"
