#!/usr/bin/env bash
# Replay, sub-windows: the build before them (e8902b0, in $B/old/) against this one,
# alternated, on one GPU. Binaries in $B (default .gpu/, scripts/gpu/stage.sh, with the old
# flow bench and demo copied to .gpu/old/); writes under $OUT. STEPS picks steps:
#   tests     test-replay, test-gpu and the flow tests, ignored (GPU) tests included
#   flow      cudaFlow's shapes, new and old alternated, CALLS pairs
#   mustard   MUSTARD's generated graphs (rnd) of 2^10 and 2^12 nodes, empty and 10^4
#             FMAs a thread, new and old alternated
#   overhead  the overhead study at r = 100, CHARIOT_EXECUTION=host and =replay, new
#   demo      the demo with its defaults, old and new alternated, DEMO_CALLS calls (3)
set -euo pipefail
STEPS=${STEPS:-tests flow}; CALLS=${CALLS:-2}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=$B/old; W=/tmp/subwindow-check; rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/gpu-steps.sh"  # step, demo_alternated
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > "$OUT/machine-$(echo $STEPS | tr ' ' '-').txt" 2>&1
if step tests; then
  echo "== GPU tests"
  for name in test-replay test-gpu test-chariot-studies-flow; do
    (cd "$B" && timeout 200 "./$name" --include-ignored --test-threads=1) > "$W/$name.log" 2>&1 && rc=0 || rc=$?
    echo "$name exit $rc: $(grep -E '^test result' "$W/$name.log" | tail -1)"
  done | tee "$OUT/gpu-tests.txt" || true
  cat "$W"/test-*.log > "$OUT/gpu-tests.log" || true
fi
if step flow; then
  echo "== flow: cudaFlow's shapes, new and old alternated"
  for i in $(seq 1 "$CALLS"); do
    for v in new old; do
      bin=$B/flow; [ $v = old ] && bin=$OLD/flow
      timeout 150 "$bin" --chariot-device --rounds 5 --csv "$OUT/flow-$v-$i.csv" > "$OUT/flow-$v-$i.log" 2>&1 && rc=0 || rc=$?
      echo "flow $v $i exit $rc"
    done
  done
fi
if step mustard; then
  echo "== MUSTARD's generated graphs, new and old alternated"
  for n in 1024 4096; do
    for v in new old; do
      bin=$B/flow; [ $v = old ] && bin=$OLD/flow
      timeout 100 "$bin" --chariot-device --shapes rnd --size rnd=$n --iters 0,5000 --rounds 5 \
        --csv "$OUT/mustard-$v-$n.csv" > "$OUT/mustard-$v-$n.log" 2>&1 && rc=0 || rc=$?
      echo "mustard $n $v exit $rc"
    done
  done
fi
if step overhead; then
  echo "== overhead study at r = 100: host and replay"
  for e in host replay; do
    CHARIOT_EXECUTION=$e timeout 100 "$B/overhead" --ratios 100 --sizes fixed --streams 4 --orders fcfs \
      --depths 2 --repeat 3 --out "$W/overhead-$e" > "$W/overhead-$e.log" 2>&1 && rc=0 || rc=$?
    echo "$e exit $rc"
  done | tee "$OUT/overhead.txt" || true
  (cd "$W" && tar czf "$OUT/overhead.tgz" overhead-*) || true
fi
if step demo; then
  echo "== demo: old and new alternated"
  DEMO_CALLS=${DEMO_CALLS:-3} demo_alternated
fi
