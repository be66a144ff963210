#!/usr/bin/env bash
# Calls B and C: the panel-chain probe (call C: with the leaf kernel and batched GEMMs) (scripts/gpu/probes/panel_chain.cu) on one H200.
set -u
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nvcc --version | tail -2; } > "$OUT/machine.txt"
cd .gpu && nvcc -O3 -std=c++17 -arch=sm_90 panel_chain.cu -lcublas -lcusolver -o pc > "$OUT/build.txt" 2>&1 && ./pc 2048 1024 > "$OUT/panel-chain.txt" 2>&1; echo "exit $?" >> "$OUT/panel-chain.txt"
