#!/usr/bin/env bash
# Task graphs and resident data on nvidia-h100-x1. Binaries: new in $B (default
# .gpu/, scripts/gpu/stage.sh), old in $OLD (default .gpu-old/: the demo and seti built at
# 8599c90, main before resident data, stripped). Writes under $OUT. STEPS picks steps
# (default "tests demo seti images cholesky"):
#   tests     every GPU test executable in $B, ignored tests included
#   demo      the demo with defaults, old and new alternated (DEMO_CALLS calls x 5 runs)
#   seti      seti 8192^2 with defaults, old and new alternated (3 calls x 5 runs); the new
#             one also runs resident mode against in-core cuFFT, alternated
#   images    GrCUDA's image DAG stream: chariot, sync, CUDA graph, multi-stream
#   cholesky  tiled Cholesky against cuSOLVER potrf
set -euo pipefail
STEPS=${STEPS:-tests demo seti images cholesky}; DEMO_CALLS=${DEMO_CALLS:-3}
source "$(dirname "$0")/gpu-steps.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=${OLD:-.gpu-old}; W=/tmp/graphs-check; rm -rf "$W" && mkdir -p "$W"
machine_txt
if step tests; then
echo "== GPU tests"
gpu_tests
fi
if step demo; then
echo "== demo, defaults, 48 x 16 MiB: old, new alternated"
demo_alternated
fi
if step seti; then
echo "== seti 8192^2, defaults: old, new alternated (new: with resident mode against in-core)"
for i in 1 2 3; do
  for v in old new; do
    if [ $v = old ]; then timeout 150 "$OLD/seti" --no-incore --repeat 5 --streams auto > "$W/seti-$v-$i.log" 2>&1
    else timeout 150 "$B/seti" --no-incore --repeat 5 --streams auto --out "$W/seti-csv" > "$W/seti-$v-$i.log" 2>&1; fi
    echo "$v $i two-phase $(grep -E '^ +auto ' "$W/seti-$v-$i.log" | head -1 | awk '{print $2}') | $(grep -E '^resident mode|^in-core cuFFT' "$W/seti-$v-$i.log" | grep -oE 'T = [0-9.]+ ms|= [0-9.]+$' | tr '\n' ' ')"
  done
done | tee "$OUT/seti.txt" || true
cat "$W"/seti-new-*.log > "$OUT/seti-new.log"; cp "$W/seti-csv/seti.csv" "$OUT/seti.csv" 2>/dev/null || true
fi
if step images; then
echo "== images: GrCUDA's IMG DAG stream, defaults"
timeout 400 "$B/images" --csv "$OUT/images.csv" 2>&1 | tee "$OUT/images.log" | tail -25 || true
fi
if step cholesky; then
echo "== cholesky: tiled (chariot defaults) against cuSOLVER potrf"
timeout 500 "$B/cholesky" ${CHOLESKY_ARGS:-} --csv "$OUT/cholesky.csv" 2>&1 | tee "$OUT/cholesky.log" | tail -25 || true
fi
