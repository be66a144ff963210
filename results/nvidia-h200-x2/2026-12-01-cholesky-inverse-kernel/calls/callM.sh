#!/usr/bin/env bash
# Call M (one H200): the CUDA test built with a broken INVERSE (the joins' second GEMM
# adds X22·L21·X11 instead of subtracting it: `&one` for `&minus`), which must fail.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
.gpu/test-mutant --include-ignored --exact on_cuda_both_factorisations_are_right --nocapture > "$OUT/mutant.txt" 2>&1
echo "mutant test exit $?" >> "$OUT/mutant.txt"
