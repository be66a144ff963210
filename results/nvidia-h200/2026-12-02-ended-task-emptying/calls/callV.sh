#!/usr/bin/env bash
# Call V (one H200): "base" is call T's new build (launches refilled in place, as
# landed in b9c6d86); "new" the working tree after it: the batch's task graph finds a
# task id below 2^16 by index (a generation stamp), not by hashing.
# 1. The new build's GPU tests (replay, recorded graphs, the GPU suite).
# 2. The submit probe of each build, 8 turns alternated, six shapes, 200 batches each.
# 3. The flow bench's loop of each build and its hand-written graph, each in a process
#    of its own, 10 turns, the order rotating.
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
for turn in $(seq 1 8); do
  if [ $((turn % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for b in $order; do
    exe=.gpu/submit_probe; [ $b = base ] && exe=.gpu/submit_probe-base
    for sn in $shapes; do
      timeout 60 $exe --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
F="$OUT/flow"; mkdir -p "$F"
builds=(base new graph)
for turn in $(seq 1 10); do
  for k in 0 1 2; do
    v=${builds[$(( (k + turn) % 3 ))]}
    case $v in
      base) step flow-base-$turn timeout 240 .gpu/flow-base --variants chariot --rounds 5 --csv "$F/base-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
python3 .gpu/submit-builds.py "$OUT" base new > "$OUT/submit-table.txt" 2>&1
python3 .gpu/loop-builds.py "$F" base new > "$OUT/table.txt" 2>&1
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
(cd "$OUT/.." && tar czf v.tgz v)
cat "$OUT/summary.txt" | grep -v "flow-"; cat "$OUT/submit-table.txt" "$OUT/table.txt"
