#!/usr/bin/env bash
# Call B: the build before (20d792c, old); free (the batch's last tasks freed by the
# thread that ends them, renumbering in place); freecut (free plus the cuts shrinking
# toward a known structure's end): alternated, 4 calls each, 5 rounds, with windows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
W=/tmp/callB; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4; do
  for b in old free freecut; do
    timeout 90 .gpu/flow-$b --rounds 5 --no-recorded --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
for b in free freecut; do
  mkdir -p "$W/$b"; for i in 1 2 3 4; do ln -sf "$W/flow-old-$i.csv" "$W/$b/flow-old-$i.csv"; ln -sf "$W/flow-$b-$i.csv" "$W/$b/flow-new-$i.csv"; done
  python3 .gpu/flow-summary.py "$W/$b" > "$OUT/flow-old-$b.txt" 2>&1 || true
  echo "== $b"; grep "geometric\|mean difference" "$OUT/flow-old-$b.txt"
done
cp "$W"/*.csv "$W"/*.log "$OUT/"
