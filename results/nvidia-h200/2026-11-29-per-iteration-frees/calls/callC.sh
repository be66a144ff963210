#!/usr/bin/env bash
# Call C: old (20d792c), free (call B), dfree (each window's tasks freed by the thread that ends it),
# dfreecut (dfree with the cuts shrinking toward a known structure's end): alternated, 4 calls each.

set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callC; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  for b in old free dfree dfreecut; do
    timeout 90 .gpu/flow-$b --rounds 5 --no-recorded --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
for b in free dfree dfreecut; do
  mkdir -p "$W/$b"; for i in 1 2 3 4; do ln -sf "$W/flow-old-$i.csv" "$W/$b/flow-old-$i.csv"; ln -sf "$W/flow-$b-$i.csv" "$W/$b/flow-new-$i.csv"; done
  python3 .gpu/flow-summary.py "$W/$b" > "$OUT/flow-old-$b.txt" 2>&1 || true
  echo "== $b"; grep "geometric\|mean difference" "$OUT/flow-old-$b.txt"
done
cp "$W"/*.csv "$W"/*.log "$OUT/"
