#!/usr/bin/env bash
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
nvcc -O3 -std=c++17 -arch=sm_90 -o .gpu/ctx_probe .gpu/ctx_probe.cu -lcuda > $OUT/build.txt 2>&1
for k in 1 2 3; do .gpu/ctx_probe; done > $OUT/ctx-probe.txt 2>&1
