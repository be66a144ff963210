#!/usr/bin/env bash
# Runs crates/chariot-align/kernels/sw.cu's kernels (portable and DPX) on the CPU, a thread per CUDA thread
# (scripts/emulate/align-kernel-emulate.cpp), against Gotoh on random cases: query lengths across
# strips, lane groups and profile tiles, odd and even subject counts, empty subjects, and
# scores past 16 bits (the DPX kernel's 32-bit re-pass). Every kernel configuration: the source
# is compiled once per strip height (SW_R 8, 16, 24, 32), and each case runs both kernels with
# every lane group size (1 … 32). Compiled as for sm_90 (DPX intrinsics, emulated here) at
# every height, and as for older GPUs (the SIMD fallback) at 16 and 24. Needs g++ with C++20;
# no GPU. The default (3 cases a build, 6 builds, 216 launches) took 5 minutes of CPU time
# (user + sys), 12 minutes of wall time on the 2-core development host while it was shared
# (load average about 160); fewer cases or heights for a quicker check.
# Usage: bash scripts/emulate/align-kernel-emulate.sh [cases per build] [strip heights]
#   e.g. bash scripts/emulate/align-kernel-emulate.sh 1 "16 32"
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cases=${1:-3}
strips=${2:-"8 16 24 32"}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
# The two lines host C++ cannot take as they are: dynamic shared memory, and PTX prmt.
sed -e 's/extern __shared__ __align__(16) signed char sprof\[\];/signed char* sprof = g_sprof;/' \
    -e 's/asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));/d = emu_prmt(a, b, sel);/' \
    "$root/crates/chariot-align/kernels/sw.cu" > "$d/sw_emulated.cu"
[ "$(grep -c 'g_sprof\|emu_prmt' "$d/sw_emulated.cu")" = 3 ] || { echo "the kernel source changed: update the sed lines"; exit 1; }
failed=0
for build in $(for r in $strips; do echo "900:$r"; done; for r in $strips; do case $r in 16|24) echo "800:$r";; esac; done); do
  arch=${build%%:*} r=${build##*:}
  g++ -std=c++20 -O2 -pthread -Wall -Wno-unknown-pragmas -D__CUDA_ARCH__=$arch -DSW_R=$r -I"$d" \
    "$root/scripts/emulate/align-kernel-emulate.cpp" -o "$d/emulate-$arch-$r"
  echo "== crates/chariot-align/kernels/sw.cu as for __CUDA_ARCH__ $arch, SW_R $r"
  "$d/emulate-$arch-$r" "$cases" || failed=1
done
[ $failed = 0 ] && echo "every build: all launches gave Gotoh's scores" || { echo "FAILED"; exit 1; }
