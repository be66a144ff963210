#!/usr/bin/env bash
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
nvcc -O3 -std=c++17 -arch=sm_90 -o .gpu/probe/streams2 .gpu/probe/streams2.cu
{ for n in 8 12 14 15 16 17 18 20 24 31 32 40 64; do for m in conc seq idle; do .gpu/probe/streams2 $m $n; done; done; .gpu/probe/streams2 events 64; } > $OUT/streams2.txt 2>&1
