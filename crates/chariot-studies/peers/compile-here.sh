#!/usr/bin/env bash
# Compiles the peers on a machine without a GPU or a CUDA toolkit, to check that they
# build: nvcc 13.0 and the CUDA headers and libraries from NVIDIA's PyPI wheels
# (nvidia-cuda-nvcc, -runtime, -crt, nvidia-nvvm; nvidia-cublas, -cusolver, -curand for
# the Cholesky example) unpacked under the git-ignored .peers/tk13/, and the sources that
# pack-sources.sh put in .peers/src/. There is no libcuda here: the driver API's symbols
# that the link needs come from a stub library made for the link alone (its functions
# return an error), so the programs link but cannot run here.
#
#   bash crates/chariot-studies/peers/compile-here.sh [stf] [taskflow] [cholesky]
#
# (default: all three; stf and cholesky take about 2 CPU minutes each). Builds into
# .peers/build/; exit 0 when every program asked for compiled and linked.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
what=${*:-stf taskflow cholesky}
P=crates/chariot-studies/peers
C=.peers/src/cccl T=.peers/src/taskflow TK=.peers/tk13 O=.peers/build
[ -d "$C" ] && [ -d "$T" ] || { echo "compile-here: run pack-sources.sh first (.peers/src/ is missing)" >&2; exit 1; }
mkdir -p "$O" .peers/wheels
NV=$PWD/$TK/nvidia/cu13
if [ ! -x "$NV/bin/nvcc" ]; then
  python3 -m pip download -q --no-deps -d .peers/wheels "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-crt==13.0.*" "nvidia-nvvm==13.0.*"
  for w in .peers/wheels/nvidia_cuda_nvcc-13* .peers/wheels/nvidia_cuda_runtime-13* .peers/wheels/nvidia_cuda_crt-13* \
           .peers/wheels/nvidia_nvvm-13*; do
    python3 -m zipfile -e "$w" "$TK"
  done
  chmod +x "$NV"/bin/* "$NV"/nvvm/bin/*
fi
if [[ " $what " == *" cholesky "* ]] && [ ! -e "$NV/include/cublas_v2.h" ]; then
  python3 -m pip download -q --no-deps -d .peers/wheels "nvidia-cublas==13.0.*" "nvidia-cusolver==12.0.*" "nvidia-curand==10.4.0.*"
  for w in .peers/wheels/nvidia_cublas-13* .peers/wheels/nvidia_cusolver-12* .peers/wheels/nvidia_curand-10*; do
    python3 - "$w" "$TK" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if "/include/" in n or n.endswith(".so") or ".so." in n:
        z.extract(n, sys.argv[2])
PY
  done
fi
# The stub libcuda and unversioned names for the libraries the Cholesky example links.
mkdir -p "$O/stub"
syms="cuCtxGetDevice cuCtxPopCurrent_v2 cuCtxPushCurrent_v2 cuDeviceGetAttribute cuFuncGetAttribute cuGetErrorName
  cuGetErrorString cuGraphAddKernelNode_v2 cuKernelGetAttribute cuLaunchKernel cuMemAddressFree cuMemAddressReserve
  cuMemCreate cuMemGetAllocationGranularity cuMemMap cuMemRelease cuMemSetAccess cuMemUnmap cuStreamGetCtx cuStreamGetId"
for s in $syms; do echo "int $s(void) { return 999; }"; done > "$O/stub/cuda_stub.c"
gcc -shared -fPIC "$O/stub/cuda_stub.c" -o "$O/stub/libcuda.so"
for l in cublas.so.13 cublasLt.so.13 cusolver.so.12 curand.so.10; do
  [ -e "$NV/lib/lib$l" ] && ln -sf "$NV/lib/lib$l" "$O/stub/lib${l%%.so*}.so"
done
STF=(-O3 -std=c++17 -arch=sm_90 --extended-lambda --expt-relaxed-constexpr -rdc=true
     -I"$C/cudax/include" -I"$C/libcudacxx/include" -I"$C/cub" -I"$C/thrust")
LINK=(-L"$NV/lib" -L"$O/stub")
rc=0
for w in $what; do
  t0=$(date +%s)
  case $w in
    stf) "$NV/bin/nvcc" "${STF[@]}" "$P/stf_flow.cu" "$P/flow_kernel.cu" "${LINK[@]}" -lcuda -o "$O/stf-flow" ;;
    taskflow) "$NV/bin/nvcc" -O3 -std=c++20 -arch=sm_90 -I"$T" "$P/taskflow_flow.cu" "$P/flow_kernel.cu" "${LINK[@]}" \
                -o "$O/taskflow-flow" ;;
    # cusolver's own needs (cusparse, nvJitLink) are not here: link with them left unresolved.
    cholesky) "$NV/bin/nvcc" "${STF[@]}" "$C/cudax/examples/stf/linear_algebra/07-cholesky.cu" "${LINK[@]}" \
                -lcublas -lcusolver -lcurand -lcuda -Xlinker --unresolved-symbols=ignore-in-shared-libs \
                -o "$O/stf-cholesky" ;;
    *) echo "compile-here: unknown program $w (stf, taskflow, cholesky)" >&2; exit 1 ;;
  esac && r=0 || r=$?
  echo "compile-here: $w exit $r, $(( $(date +%s) - t0 )) s"
  [ $r = 0 ] || rc=1
done
exit $rc
