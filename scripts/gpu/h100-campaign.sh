#!/usr/bin/env bash
# One-GPU campaign (the overhead study and the robustness work) on nvidia-h100-x1, run from the repository root on
# the device with the binaries staged in $B (default .gpu-h100/), built here:
#   overhead        cargo build --release --bench overhead            (target/release/deps/overhead-*)
#   test-gpu        cargo test --release --test gpu --no-run
#   test-bad-input  cargo test --release --test bad_input --no-run
#   test-lib        cargo test --release --lib --no-run
# Steps: machine info; every GPU test (tests/gpu.rs, the bad-input suite and the
# library's unit tests, ignored ones included); the overhead study over r = 0.01 … 100
# (the kernel-bound end, r < 0.1, on a smaller grid: one run there takes ~2 s).
# Everything lands in $OUT: logs loose, the study's CSVs, traces and plots in study.tgz.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu-h100}
W=/tmp/h100-campaign
rm -rf "$W" && mkdir -p "$W"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1

echo "== GPU tests"
(cd "$B" && timeout 240 ./test-gpu --include-ignored --test-threads=1) > "$W/gpu-tests.log" 2>&1 && rc=0 || rc=$?; echo "exit status: $rc" >> "$W/gpu-tests.log"
(cd "$B" && timeout 120 ./test-bad-input --include-ignored --test-threads=1) > "$W/bad-input-tests.log" 2>&1 && rc=0 || rc=$?; echo "exit status: $rc" >> "$W/bad-input-tests.log"
(cd "$B" && timeout 120 ./test-lib --include-ignored --test-threads=1) > "$W/lib-tests.log" 2>&1 && rc=0 || rc=$?; echo "exit status: $rc" >> "$W/lib-tests.log"
for f in gpu-tests bad-input-tests lib-tests; do cp "$W/$f.log" "$OUT/"; grep -E "^test result|exit status|FAILED|panicked" "$W/$f.log" | head -8 || true; done

echo "== the study, kernel-bound end (r = 0.01, 0.03)"
mkdir -p "$W/study-low" "$W/study"
timeout 200 "$B/overhead" --backend cuda --ratios 0.01,0.03 --sizes fixed,random --seeds 1 --streams 2,4 --orders fcfs,lf \
  --depths 2 --out "$W/study-low" 2>&1 | tr '\r' '\n' | grep -v ' runs, ' > "$W/study-low/study.log" || true
tail -n 12 "$W/study-low/study.log" || true
echo "== the study, r = 0.1 … 100"
timeout 300 "$B/overhead" --backend cuda --ratios 0.1,0.3,1,3,10,30,100 --sizes fixed,random --seeds 1,2 --streams 2,4,8 \
  --orders fcfs,lf,sf --depths 2,3 --trace --out "$W/study" 2>&1 | tr '\r' '\n' | grep -v ' runs, ' > "$W/study/study.log" || true
tail -n 45 "$W/study/study.log" || true
tar czf "$OUT/study.tgz" -C "$W" study-low study || true
