#!/usr/bin/env bash
# Replay on one GPU: replay of small tasks as CUDA graphs, and the device-side graph.
# Binaries in $B (default .gpu/, scripts/gpu/stage.sh); writes under $OUT. STEPS picks steps
# (default "tests flow overhead"):
#   tests     test-replay, test-gpu and the flow tests, ignored (GPU) tests included
#   flow      cudaFlow's shapes: chariot (defaults: replay where it pays), chariot with
#             replay off, the hand-written CUDA graph, the device-side graph
#   mustard   MUSTARD's generated graphs (rnd) of 2^8..2^14 nodes, empty and 10^4 FMAs
#   overhead  the overhead study at r = 100, CHARIOT_EXECUTION=host and =replay
#             alternated (2 calls each), the hand-written baselines in every call
set -euo pipefail
STEPS=${STEPS:-tests flow mustard overhead}; DEMO_CALLS=1
source "$(dirname "$0")/gpu-steps.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; W=/tmp/replay-check; rm -rf "$W" && mkdir -p "$W"
machine_txt
if step tests; then
  echo "== GPU tests"
  for name in test-replay test-gpu test-chariot-studies-flow; do
    (cd "$B" && timeout 300 "./$name" --include-ignored --test-threads=1) > "$W/$name.log" 2>&1 && rc=0 || rc=$?
    echo "$name exit $rc: $(grep -E '^test result' "$W/$name.log" | tail -1)"
  done | tee "$OUT/gpu-tests.txt" || true
  cat "$W"/test-*.log > "$OUT/gpu-tests.log" || true
fi
if step flow; then
  echo "== flow: cudaFlow's shapes"
  timeout 400 "$B/flow" --device-graph --chariot-device --rounds 5 --csv "$OUT/flow.csv" 2>&1 | tee "$OUT/flow.log" || true
fi
if step mustard; then
  echo "== MUSTARD's generated graphs: 2^8..2^14 nodes, iters 0 and 5000 (10^4 FMAs a thread)"
  for n in 256 1024 4096 16384; do
    timeout 200 "$B/flow" --device-graph --chariot-device --shapes rnd --size rnd=$n --iters 0,5000 --rounds 5 \
      --csv "$W/mustard-$n.csv" > "$W/mustard-$n.log" 2>&1 || true
    grep -E '^rnd ' "$W/mustard-$n.log" || true
  done | tee "$OUT/mustard.txt" || true
  cat "$W"/mustard-*.log > "$OUT/mustard.log" || true
  (cd "$W" && cat mustard-256.csv && tail -n +2 -q mustard-1024.csv mustard-4096.csv mustard-16384.csv) > "$OUT/mustard.csv" || true
fi
if step overhead; then
  echo "== overhead study at r = 100: host and replay alternated"
  for i in 1 2; do
    for e in host replay; do
      CHARIOT_EXECUTION=$e timeout 200 "$B/overhead" --ratios 100 --sizes fixed --streams 4 --orders fcfs \
        --depths 2 --repeat 3 --out "$W/overhead-$e-$i" > "$W/overhead-$e-$i.log" 2>&1 && rc=0 || rc=$?
      echo "$e $i exit $rc"
    done
  done | tee "$OUT/overhead.txt" || true
  (cd "$W" && tar czf "$OUT/overhead.tgz" overhead-*) || true
fi
