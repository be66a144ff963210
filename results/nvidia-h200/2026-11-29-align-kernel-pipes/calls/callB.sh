#!/usr/bin/env bash
# Call B of the final campaign: CUDASW++'s peak set-up at 1,024 (DPX) and 2,048 (DPX and half2).
set -uo pipefail
O=/tmp/o/b; mkdir -p "$O"
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt" 2>&1
OUT=$O/peak-c B=.gpu CS4=.gpu/cs4bin W=/tmp/avc VARIANTS=final PARTS=peak PEAK_LENS=1024 CS4_KERNELS=dpx timeout 150 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-c/peak.log"
OUT=$O/peak-d B=.gpu CS4=.gpu/cs4bin W=/tmp/avc VARIANTS=final PARTS=peak PEAK_LENS=2048 CS4_KERNELS="dpx half2" timeout 330 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-d/peak.log"
tar czf "$OUT/b.tgz" -C /tmp/o b
