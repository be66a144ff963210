#!/usr/bin/env bash
# Call H: old (20d792c), new (call G's build), foresee (new, with a batch's windows of a
# structure that ran before foreseen to end as it did: synchronize sleeps until just
# before and spins): alternated, 4 calls each, 5 rounds, every variant, with windows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callH; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  for b in old new foresee; do
    timeout 90 .gpu/flow-$b --rounds 5 --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
for b in new foresee; do
  mkdir -p "$W/$b"; for i in 1 2 3 4; do ln -sf "$W/flow-old-$i.csv" "$W/$b/flow-old-$i.csv"; ln -sf "$W/flow-$b-$i.csv" "$W/$b/flow-new-$i.csv"; done
  python3 .gpu/flow-summary.py "$W/$b" > "$OUT/flow-old-$b.txt" 2>&1 || true
  python3 .gpu/flow-recorded-parts.py "$W/$b" old new > "$OUT/recorded-parts-$b.txt" 2>&1 || true
  echo "== $b"; grep "geometric\|mean difference\|rows above" "$OUT/flow-old-$b.txt" "$OUT/recorded-parts-$b.txt"
done
python3 .gpu/flow-window-tails.py "$W" old new foresee > "$OUT/window-tails.txt" 2>&1 || true
tail -3 "$OUT/window-tails.txt"
cp "$W"/*.csv "$W"/*.log "$OUT/"
