#!/usr/bin/env bash
# Call B (nvidia-h200-x2): the final build (guest lanes). The runtime's GPU tests with
# both GPUs visible; MUSTARD rnd 4096 at 10,000 spin iterations with 1, 132, 264, 528
# and 2,112 blocks a node at D = 1 and D = 2 alternated (3 calls each; the
# hand-written graph on GPU 0).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in gpu recorded replay resident; do
  (cd .gpu && timeout 150 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callB; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3; do
  for b in 1 132 264 528 2112; do
    for d in 1 2; do
      timeout 120 .gpu/flow --gpus $d --blocks $b --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
        --csv "$W/rnd4096-b$b-d$d-$i.csv" > "$W/rnd4096-b$b-d$d-$i.log" 2>&1 || echo "rnd b$b d$d $i exit $?"
    done
  done
  echo "pass $i done after $(( $(date +%s) - t0 )) s"
done
for f in "$W"/rnd4096-*.log; do echo "== $(basename $f)"; grep -E "GPUs|^rnd " "$f" | head -3; done > "$OUT/rnd4096.txt"
tar czf "$OUT/csv.tgz" -C "$W" $(cd $W && ls) || true
