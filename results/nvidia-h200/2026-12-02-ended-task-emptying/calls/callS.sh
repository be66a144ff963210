#!/usr/bin/env bash
# Call S (one H200): four builds. "old" 325dc83; "new" the working tree (windows
# sealed at the cut, as in call R); "tail" new with the ended tasks not emptied by
# `synchronize` before it waits (the thread that ends the batch's last window empties
# all of them after telling the waiter); "told" old with that same change alone.
# 1. The submit probe of each build, 8 turns rotating, six shapes, 200 batches each.
# 2. The flow bench's loop of each build and its hand-written graph, each in a process
#    of its own, 10 turns, the order rotating.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
shapes="lc:1024 ep:1024 dc:10 mr:64 dag:32 rnd:1024"
pb=(old new tail told)
for turn in $(seq 1 6); do
  for k in 0 1 2 3; do
    b=${pb[$(( (k + turn) % 4 ))]}
    exe=.gpu/submit_probe-$b; [ $b = new ] && exe=.gpu/submit_probe
    for sn in $shapes; do
      timeout 60 $exe --backend cuda --shape ${sn%%:*} --size ${sn##*:} --batches 200 >> "$OUT/submit-$b.txt" 2>> "$L" || echo "submit $b ${sn} turn $turn failed" >> "$S"
    done
  done
done
echo "submit probe done" >> "$S"
F="$OUT/flow"; mkdir -p "$F"
builds=(old new tail told graph)
for turn in $(seq 1 10); do
  for k in 0 1 2 3 4; do
    v=${builds[$(( (k + turn) % 5 ))]}
    case $v in
      old) step flow-old-$turn timeout 240 .gpu/flow-old --variants chariot --rounds 5 --csv "$F/old-$turn.csv" ;;
      new) step flow-new-$turn timeout 240 .gpu/flow --variants chariot --rounds 5 --csv "$F/new-$turn.csv" ;;
      tail) step flow-tail-$turn timeout 240 .gpu/flow-tail --variants chariot --rounds 5 --csv "$F/tail-$turn.csv" ;;
      told) step flow-told-$turn timeout 240 .gpu/flow-told --variants chariot --rounds 5 --csv "$F/told-$turn.csv" ;;
      graph) step flow-graph-$turn timeout 240 .gpu/flow --variants graph --rounds 5 --csv "$F/graph-$turn.csv" ;;
    esac
  done
done
python3 .gpu/submit-builds.py "$OUT" old new tail told > "$OUT/submit-table.txt" 2>&1
python3 .gpu/loop-builds.py "$F" old new tail told > "$OUT/table.txt" 2>&1
(cd "$OUT" && tar czf flow.tgz flow && rm -rf flow)
(cd "$OUT/.." && tar czf s.tgz s)
cat "$OUT/submit-table.txt" "$OUT/table.txt"
