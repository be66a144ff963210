#!/usr/bin/env bash
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
nvcc -O3 -std=c++17 -arch=sm_90 -o .gpu/what_probe .gpu/what_probe.cu -lcuda > $OUT/build.txt 2>&1
for rep in 1 2; do for m in conc few8 many8 many1; do .gpu/what_probe $m; done; done > $OUT/what.txt 2>&1
