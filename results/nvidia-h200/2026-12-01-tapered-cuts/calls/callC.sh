#!/usr/bin/env bash
# Call C (one H200): the flow bench's per-iteration loop of the build before (old,
# 10bfdbd) and of this one (new: external predecessors inline, the kept layout
# followed as tasks are held, tapered last cuts), and its hand-written CUDA graph, each
# in a process of its own, 10 turns, the order rotating (old new graph, new graph old,
# graph old new, ...); the new build's windows written. Then the submit probe of each
# build, 6 turns alternated (old new, new old, ...), six shapes, 200 batches each.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
F="$OUT/flow"; mkdir -p "$F"
builds=(old new graph)
for turn in $(seq 1 10); do
  for k in 0 1 2; do
    v=${builds[$(( (k + turn) % 3 ))]}
    case $v in
      old) step flow-old-$turn timeout 240 .gpu/flow-old --variants chariot --rounds 5 --csv "$F/old-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" --windows "$F/windows-new-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
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
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
