#!/usr/bin/env bash
# The final call: the GPU score test of the build, then chariot-align against CUDASW++ 4.0
# (prebuilt in call A from its sources, carried in .gpu/cs4bin): the paper-shaped database
# with each of the 7 queries and all 7, with CUDASW++'s 20 queries, and its peak set-up.
set -uo pipefail
O=/tmp/o/f; mkdir -p "$O"
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt" 2>&1
CS4=.gpu/cs4bin
if ! ldd "$CS4/align" > "$O/cs4-ldd.txt" 2>&1 || grep -q "not found" "$O/cs4-ldd.txt"; then
  echo "the carried CUDASW++ does not load here: building it"; mkdir -p .peers && tar xf .gpu/cs4.tar -C .peers
  bash .peers/build-on-gpu.sh > "$O/cs4build.log" 2>&1; CS4=/tmp/cudasw4
fi
(cd .gpu && timeout 90 ./test-chariot-align-end_to_end --ignored --exact dpx_and_portable_kernels_match_gotoh_on_gpu --test-threads=1) > "$O/gpu-test.log" 2>&1
echo "GPU test exit $?: $(grep -E '^test result' "$O/gpu-test.log" | tail -1)"
OUT=$O/singles B=.gpu CS4=$CS4 W=/tmp/avc STREAMED=0 ROUNDS=3 timeout 160 bash .gpu/align-vs-cudasw.sh > /dev/null 2>&1
sed -n '/== summary/,$p' "$O/singles/align-vs-cudasw.log" | grep -v "^  [0-9]" | head -40
OUT=$O/peak-a B=.gpu CS4=$CS4 W=/tmp/avc VARIANTS=final PARTS="paper20 peak" PEAK_LENS=256 CS4_KERNELS="dpx half2" timeout 140 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-a/peak.log"
OUT=$O/peak-b B=.gpu CS4=$CS4 W=/tmp/avc VARIANTS=final PARTS=peak PEAK_LENS="128 512 1024" CS4_KERNELS=dpx timeout 175 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-b/peak.log"
