#!/usr/bin/env bash
# Call M (one H200): three builds' per-iteration loops. "old" is 588cf00; "pad" is call
# K's new build (what the submitting thread locks on every task, and the Arc counts a
# launch moves, on cache lines of their own; a kernel's first launch shape read without
# a lock; the task sequence number without a locked instruction); "touch" is pad with
# the ended tasks read before they are emptied (their misses overlapping).
# 1. The submit probe of each build, 6 turns, the order rotating, six shapes, 200 batches.
# 2. The flow bench's loop of each build and its hand-written graph, each in a process
#    of its own, 8 turns, the order rotating.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
shapes="lc:1024 ep:1024 dc:10 mr:64 dag:32 rnd:1024"
probes=(old pad touch)
for turn in $(seq 1 6); do
  for k in 0 1 2; do
    b=${probes[$(( (k + turn) % 3 ))]}
    for sn in $shapes; do
      timeout 60 .gpu/submit_probe-$b --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
F="$OUT/flow"; mkdir -p "$F"
builds=(old pad touch graph)
for turn in $(seq 1 8); do
  for k in 0 1 2 3; do
    v=${builds[$(( (k + turn) % 4 ))]}
    case $v in
      graph) step flow-graph-$turn timeout 240 .gpu/flow-pad --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
      *) step flow-$v-$turn timeout 240 .gpu/flow-$v --variants chariot --rounds 5 --csv "$F/$v-$turn.csv" ;;
    esac
  done
done
python3 .gpu/submit-builds.py "$OUT" old pad touch > "$OUT/submit-table.txt" 2>&1
python3 .gpu/loop-builds.py "$F" old pad touch > "$OUT/table.txt" 2>&1
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
cat "$OUT/submit-table.txt" "$OUT/table.txt"
