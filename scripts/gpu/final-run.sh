#!/usr/bin/env bash
# The core runtime's final verification run of 2026-11-23 (results/nvidia-h100-x1/final/):
# the GPU tests, the demo, host cost per command and the overhead study, with the
# binaries staged in .gpu/ (the run staged this script as .gpu/final.sh). Writes under $OUT.
set -euo pipefail
: "${OUT:?set OUT to a directory}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/study" "$OUT/demo"
.gpu/test-gpu --include-ignored --test-threads 1 2>&1 | tail -25 > "$OUT/gpu-tests.log" || true; tail -3 "$OUT/gpu-tests.log"
.gpu/chariot-demo --streams 1,2,3,4 --depths 1,2 --out "$OUT/demo" 2>&1 | head -18 | tee "$OUT/demo.log" || true
rm -f "$OUT/demo/demo-serial-records.csv"
.gpu/bench-dispatch_overhead --tasks 20000 --streams 1,4 --depths 1,2 --out "$OUT/overhead.csv" 2>&1 | head -6 || true
timeout 300 .gpu/overhead --ratios 0.1,1,10,100 --sizes fixed,random --seeds 1,2 --streams 1,2,4,8 --orders fcfs,lf,sf --depths 1,2 --out "$OUT/study" 2>&1 | tr '\r' '\n' | grep -v "runs," | tee "$OUT/study/study.log" || true
