#!/usr/bin/env bash
# Call F (nvidia-h200-x2): f13f6d7 (a spread window's key marked; a spread part's runs
# fail once a GPU it spans has left). test-recorded and test-replay with both GPUs
# visible; MUSTARD rnd 4096 at 10,000 spin iterations with 33 and 264 blocks a node at
# D = 1 and D = 2 alternated (3 calls each).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
for t in recorded replay; do
  (cd .gpu && timeout 150 ./test-$t --include-ignored --test-threads=1) > "$OUT/test-$t.log" 2>&1
  echo "test-$t exit $? after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=/tmp/callF; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3; do
  for b in 33 264; do
    for d in 1 2; do
      timeout 60 .gpu/flow --gpus $d --blocks $b --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
        --csv "$W/rnd4096-b$b-d$d-$i.csv" > "$W/rnd4096-b$b-d$d-$i.log" 2>&1 || echo "rnd b$b d$d $i exit $?"
    done
  done
done
echo "rnd done after $(( $(date +%s) - t0 )) s"
tar czf "$OUT/csv.tgz" -C "$W" $(cd $W && ls) || true
