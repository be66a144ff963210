#!/usr/bin/env bash
# Call A (one H200): the working tree after 10bfdbd ("new": a held task's predecessors
# in earlier windows inline, a cut's kept layout compared as its tasks are held, the
# last cuts of a host-paced structure tapered) against 10bfdbd ("old").
# 1. The runtime's GPU tests (replay, recorded graphs, the GPU suite) of the new build.
# 2. The flow bench's per-iteration loop (defaults) of each build and its hand-written
#    CUDA graph, each in a process of its own, 3 turns, the order rotating; the new
#    build's windows written.
# 3. The submit probe of each build, 2 turns alternated, six shapes, 200 batches each.
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
F="$OUT/flow"; mkdir -p "$F"
for turn in 1 2 3; do
  case $turn in 1) order="old new graph";; 2) order="new graph old";; 3) order="graph old new";; esac
  for v in $order; do
    case $v in
      old) step flow-old-$turn timeout 240 .gpu/flow-old --variants chariot --rounds 5 --csv "$F/old-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" --windows "$F/new-windows-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
shapes="lc:1024 ep:1024 dc:10 mr:64 dag:32 rnd:1024"
for turn in 1 2; do
  if [ $turn = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    exe=.gpu/submit_probe; [ $b = old ] && exe=.gpu/submit_probe-old
    for sn in $shapes; do
      timeout 60 $exe --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
