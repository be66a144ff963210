#!/usr/bin/env bash
# Call O (nvidia-h200-x2): the final build on two GPUs. The runtime's GPU tests with
# both GPUs visible; the flow bench at D = 1 and D = 2 alternated (3 calls each, 5
# rounds; the hand-written graph stays on GPU 0); MUSTARD rnd 4096 at 10,000 spin
# iterations at D = 1 and D = 2 alternated (3 calls each).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 120 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callO; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3; do
  for d in 1 2; do
    timeout 90 .gpu/flow --gpus $d --rounds 5 --csv "$W/flow-d$d-$i.csv" > "$W/flow-d$d-$i.log" 2>&1 || echo "d$d $i exit $?"
    timeout 90 .gpu/flow --gpus $d --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 --csv "$W/rnd4096-d$d-$i.csv" > "$W/rnd4096-d$d-$i.log" 2>&1 || echo "rnd d$d $i exit $?"
  done
done
echo "flow done after $(( $(date +%s) - t0 )) s"
python3 .gpu/flow-recorded-parts.py "$W" d1 d2 > "$OUT/recorded-parts.txt" 2>&1 || true
grep "rows above" "$OUT/recorded-parts.txt"
for f in "$W"/rnd4096-d*-*.log; do echo "== $(basename $f)"; grep -A2 "^shape" "$f" | head -3; done > "$OUT/rnd4096.txt"
cat "$OUT/rnd4096.txt"
tar czf "$OUT/flow-csv.tgz" -C "$W" $(cd $W && ls) || true
