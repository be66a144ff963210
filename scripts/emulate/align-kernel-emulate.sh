#!/usr/bin/env bash
# Runs crates/chariot-align/kernels/sw.cu's kernels (portable, DPX and the DPX query pair) on the CPU, a thread per CUDA thread
# (scripts/emulate/align-kernel-emulate.cpp), against Gotoh on random cases: query lengths across
# strips, lane groups and profile tiles, odd and even subject counts, empty subjects, and
# scores past 16 bits (the DPX kernel's 32-bit re-pass). Needs g++ with C++20; no GPU.
# The kernel source is compiled twice: as for sm_90 (DPX intrinsics, emulated here) and as
# for older GPUs (the SIMD fallback). About 10 minutes for the 20 default cases on 2 cores.
# Usage: bash scripts/emulate/align-kernel-emulate.sh [cases]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
# The two lines host C++ cannot take as they are: dynamic shared memory, and PTX prmt.
sed -e 's/extern __shared__ __align__(16) signed char sprof\[\];/signed char* sprof = g_sprof;/' \
    -e 's/asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));/d = emu_prmt(a, b, sel);/' \
    "$root/crates/chariot-align/kernels/sw.cu" > "$d/sw_emulated.cu"
[ "$(grep -c 'g_sprof\|emu_prmt' "$d/sw_emulated.cu")" = 4 ] || { echo "the kernel source changed: update the sed lines"; exit 1; }
for arch in 900 800; do
  g++ -std=c++20 -O2 -pthread -Wall -Wno-unknown-pragmas -D__CUDA_ARCH__=$arch -I"$d" \
    "$root/scripts/emulate/align-kernel-emulate.cpp" -o "$d/emulate-$arch"
  echo "== crates/chariot-align/kernels/sw.cu as for __CUDA_ARCH__ $arch"
  "$d/emulate-$arch" "${1:-20}"
done
