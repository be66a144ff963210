#!/usr/bin/env bash
# Call K (one H200): the working tree after 588cf00 ("new": what the submitting thread
# locks on every task on cache lines of its own; the kernel's, the device buffer's and
# the waves' Arc counts on lines of their own; a kernel's first launch shape read
# without a lock; the task sequence number without a locked instruction) against
# 588cf00 ("old").
# 1. The runtime's GPU tests (replay, recorded graphs, the GPU suite) of the new build.
# 2. The submit probe of each build, 6 turns alternated, six shapes, 200 batches each.
# 3. The flow bench's per-iteration loop of each build and its hand-written CUDA graph,
#    each in a process of its own, 8 turns, the order rotating.
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
for turn in $(seq 1 6); do
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
for turn in $(seq 1 8); do
  for k in 0 1 2; do
    v=${builds[$(( (k + turn) % 3 ))]}
    case $v in
      old) step flow-old-$turn timeout 240 .gpu/flow-old --variants chariot --rounds 5 --csv "$F/old-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
python3 .gpu/submit-ab.py "$OUT" > "$OUT/submit-table.txt" 2>&1
python3 .gpu/loop-ab.py "$F" > "$OUT/table.txt" 2>&1
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
cat "$OUT/submit-table.txt" "$OUT/table.txt"
