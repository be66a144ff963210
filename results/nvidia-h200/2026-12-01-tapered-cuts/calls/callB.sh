#!/usr/bin/env bash
# Call B (one H200): the flow bench's per-iteration loop of four builds and its
# hand-written CUDA graph, each in a process of its own, 4 turns, the order rotating:
# old (10bfdbd), new (the working tree of call A: external predecessors inline, the kept
# layout followed as tasks are held, tapered last cuts), notaper (new without the
# taper), ender (new, with what ended windows left freed by the thread that ends the
# batch's last tasks, after telling the waiter, not by `synchronize` before it waits).
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
F="$OUT/flow"; mkdir -p "$F"
builds=(old new notaper ender graph)
for turn in 1 2 3 4; do
  for k in 0 1 2 3 4; do
    v=${builds[$(( (k + turn) % 5 ))]}
    case $v in
      old) exe=.gpu/flow-old; args="--variants chariot" ;;
      new) exe=.gpu/flow; args="--variants chariot" ;;
      notaper) exe=.gpu/flow-notaper; args="--variants chariot" ;;
      ender) exe=.gpu/flow-ender; args="--variants chariot" ;;
      graph) exe=.gpu/flow; args="--variants graph" ;;
    esac
    step flow-$v-$turn timeout 240 $exe $args --rounds 5 --csv "$F/$v-$turn.csv"
  done
done
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
