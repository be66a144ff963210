#!/usr/bin/env bash
# Call K: the runtime's GPU tests of the new build (a batch's last replayed tasks freed
# by the thread that ends them, waited for only where a buffer's handle went while
# tasks held it); then the flow bench of the build before (20d792c, old), the first
# commit (7d463c0, mid: call J's new) and the new build, alternated, 5 calls each,
# 5 rounds, every variant, with the windows of every per-iteration run.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 150 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callK; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3 4 5; do
  for b in old mid new; do
    timeout 90 .gpu/flow-$b --rounds 5 --csv "$W/flow-$b-$i.csv" --windows "$W/windows-$b-$i.csv" > "$W/flow-$b-$i.log" 2>&1 || echo "$b $i exit $?"
  done
done
for b in mid new; do
  mkdir -p "$W/$b"; for i in 1 2 3 4 5; do ln -sf "$W/flow-old-$i.csv" "$W/$b/flow-old-$i.csv"; ln -sf "$W/flow-$b-$i.csv" "$W/$b/flow-new-$i.csv"; done
  python3 .gpu/flow-summary.py "$W/$b" > "$OUT/flow-old-$b.txt" 2>&1 || true
  python3 .gpu/flow-recorded-parts.py "$W/$b" old new > "$OUT/recorded-parts-$b.txt" 2>&1 || true
  echo "== $b"; grep "geometric\|mean difference\|rows above" "$OUT/flow-old-$b.txt" "$OUT/recorded-parts-$b.txt"
done
python3 .gpu/flow-window-tails.py "$W" old mid new > "$OUT/window-tails.txt" 2>&1 || true
tail -3 "$OUT/window-tails.txt"
cp "$W"/*.csv "$W"/*.log "$OUT/"
