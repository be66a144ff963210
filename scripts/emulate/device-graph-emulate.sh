#!/usr/bin/env bash
# Runs crates/chariot-studies/kernels/device_graph.cu's kernels on the CPU, a thread per block of one thread
# (scripts/emulate/device-graph-emulate.cpp), on chains, independent nodes, trees, map-reduce
# and random DAGs: every node once and after its predecessors, the counters, a failing
# node and the host's abort. Checks the scheduling logic, not the GPU's memory model.
# Needs g++ with C++20; no GPU. A few seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
# The one hook: record each node as it finishes its body.
sed -e 's/if (threadIdx.x == 0) sink\[0\] = a + b;/if (threadIdx.x == 0) { sink[0] = a + b; emu_ran(t); }/' \
    "$root/crates/chariot-studies/kernels/device_graph.cu" > "$d/device_graph_emulated.cu"
[ "$(grep -c 'emu_ran' "$d/device_graph_emulated.cu")" = 1 ] || { echo "the kernel source changed: update the sed line"; exit 1; }
g++ -std=c++20 -O2 -pthread -Wall -I"$d" "$root/scripts/emulate/device-graph-emulate.cpp" -o "$d/emulate"
"$d/emulate"
# With NVRTC=/path/to/libnvrtc.so.N (e.g. from the nvidia-cuda-nvrtc wheel; no GPU
# needed), also compile the kernels as the driver side does, for sm_90 and sm_80.
if [ -n "${NVRTC:-}" ]; then
  python3 - "$NVRTC" "$root/crates/chariot-studies/kernels/device_graph.cu" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); src = open(sys.argv[2], "rb").read()
for arch in (b"sm_90", b"sm_80"):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"device_graph_run.cu", 0, None, None) == 0
    opts = (ctypes.c_char_p * 2)(b"--gpu-architecture=" + arch, b"--std=c++17")
    rc = lib.nvrtcCompileProgram(prog, 2, opts)
    n = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value); lib.nvrtcGetProgramLog(prog, log)
    print(f"NVRTC {arch.decode()}: {'compiled' if rc == 0 else 'FAILED'}", log.value.decode().strip())
    if rc != 0: sys.exit(1)
PY
fi
