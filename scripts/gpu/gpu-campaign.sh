#!/usr/bin/env bash
# The measurement campaign of the core-runtime issue, run on the GPU machine from the
# repository root with the release binaries staged in .gpu/ (today scripts/gpu/stage.sh does that).
# Writes everything under $OUT (the device tool brings it back).
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
mkdir -p "$OUT/demo" "$OUT/timing"
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader; nproc
} > "$OUT/machine.txt" 2>&1
echo "== GPU tests"
for t in .gpu/test-gpu; do
  [ -x "$t" ] && "$t" --include-ignored --test-threads 1 2>&1 | tail -40 || true
done | tee "$OUT/gpu-tests.log" || true
echo "== demo (host-observed timing, the default)"
.gpu/chariot-demo --streams 1,2,3,4 --depths 1,2 --out "$OUT/demo" 2>&1 | tee "$OUT/demo.log"
echo "== demo with device timing events (for comparison)"
.gpu/chariot-demo --device-timing --streams 4 --depths 1,2 --out "$OUT/timing" 2>&1 | tail -6 | tee -a "$OUT/demo.log"
rm -f "$OUT/timing/demo-trace.json" "$OUT/timing/demo-serial-records.csv"
echo "== per-command overhead"
.gpu/bench-dispatch_overhead --tasks 20000 --streams 1,4 --depths 1,2 --out "$OUT/overhead.csv" 2>&1 | tee "$OUT/overhead.log"
