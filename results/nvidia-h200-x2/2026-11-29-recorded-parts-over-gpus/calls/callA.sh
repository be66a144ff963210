#!/usr/bin/env bash
# Call A (nvidia-h200-x2): recorded parts spread over GPUs. The runtime's GPU tests with
# both GPUs visible; MUSTARD rnd 4096 at 10,000 spin iterations with 1, 264 and 2,112
# blocks a node at D = 1 and D = 2 alternated (3 calls each; the hand-written graph on
# GPU 0); the default flow bench at D = 1 and 2, this build and the build before
# (flow-old, e5ccd7e) alternated (2 calls each).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 150 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callA; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3; do
  for b in 1 264 2112; do
    for d in 1 2; do
      timeout 120 .gpu/flow --gpus $d --blocks $b --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
        --csv "$W/rnd4096-b$b-d$d-$i.csv" > "$W/rnd4096-b$b-d$d-$i.log" 2>&1 || echo "rnd b$b d$d $i exit $?"
    done
  done
done
echo "rnd done after $(( $(date +%s) - t0 )) s"
for i in 1 2; do
  for d in 1 2; do
    for v in new old; do
      bin=.gpu/flow; [ $v = old ] && bin=.gpu/flow-old
      timeout 90 $bin --gpus $d --rounds 5 --csv "$W/flow-$v-d$d-$i.csv" > "$W/flow-$v-d$d-$i.log" 2>&1 || echo "flow $v d$d $i exit $?"
    done
  done
done
echo "flow done after $(( $(date +%s) - t0 )) s"
for f in "$W"/rnd4096-*.log; do echo "== $(basename $f)"; grep -E "GPUs|^shape|^rnd " "$f" | head -4; done > "$OUT/rnd4096.txt"
grep -A1 "^shape" "$W"/rnd4096-b2112-d*-1.log | head
tar czf "$OUT/csv.tgz" -C "$W" $(cd $W && ls) || true
