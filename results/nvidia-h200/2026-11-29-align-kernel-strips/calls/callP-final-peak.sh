#!/usr/bin/env bash
# The peak set-up at 128, 512 and 1,024 with the final build (CUDASW++ prebuilt, carried).
set -uo pipefail
O=/tmp/o/p; mkdir -p "$O"
export PATH=/usr/local/cuda/bin:$PATH
OUT=$O/peak-b B=.gpu CS4=.gpu/cs4bin W=/tmp/avc VARIANTS=final PARTS=peak PEAK_LENS="128 512 1024" CS4_KERNELS=dpx timeout 200 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-b/peak.log"
