#!/usr/bin/env bash
# Replay on two GPUs (nvidia-h100-x2): the GPU tests that need two GPUs (peer copies of
# resident data, a sticky error moving tasks, the device graph over two GPUs) with the
# rest, and cudaFlow's EP and MUSTARD's generated graphs at D = 1 and D = 2, alternated
# (chariot's schedulers and the device graph on D GPUs; the hand-written CUDA graph on
# one: the single-GPU baseline). Binaries in $B (default .gpu/); writes under $OUT.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; W=/tmp/replay-x2; rm -rf "$W" && mkdir -p "$W"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
echo "== GPU tests"
for name in test-gpu test-resident test-replay test-chariot-studies-flow; do
  (cd "$B" && timeout 300 "./$name" --include-ignored --test-threads=1) > "$W/$name.log" 2>&1 && rc=0 || rc=$?
  echo "$name exit $rc: $(grep -E '^test result' "$W/$name.log" | tail -1)"
done | tee "$OUT/gpu-tests.txt" || true
cat "$W"/test-*.log > "$OUT/gpu-tests.log" || true
echo "== D = 1 and D = 2 alternated"
for i in 1 2; do
  for d in 1 2; do
    timeout 200 "$B/flow" --gpus $d --device-graph --chariot-device --shapes ep,rnd --size ep=1024,rnd=4096 \
      --iters 0,5000 --rounds 5 --csv "$W/x2-d$d-$i.csv" > "$W/x2-d$d-$i.log" 2>&1 && rc=0 || rc=$?
    echo "D=$d call $i exit $rc"; grep -E '^(ep|rnd) ' "$W/x2-d$d-$i.log" | head -4 || true
  done
done | tee "$OUT/x2.txt" || true
for f in "$W"/x2-*.log; do echo "===== $(basename "$f")"; cat "$f"; done > "$OUT/x2.log"
(cd "$W" && for f in x2-*.csv; do sed "s/^/$f,/" "$f"; done) > "$OUT/x2.csv" || true
