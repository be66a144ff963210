#!/usr/bin/env bash
# Call A of the final campaign: the GPU tests of the build, then chariot-align against
# CUDASW++ 4.0 (prebuilt from its sources, carried in .gpu/cs4bin): the paper-shaped
# database with each of the 7 queries and all 7; CUDASW++'s 20 queries on the paper-shaped
# database and its peak set-up at 256 (DPX and half2 kernels), 128, 512 and 768 (DPX).
set -uo pipefail
O=/tmp/o/a; mkdir -p "$O"
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$O/machine.txt" 2>&1
CS4=.gpu/cs4bin
if ! ldd "$CS4/align" > "$O/cs4-ldd.txt" 2>&1 || grep -q "not found" "$O/cs4-ldd.txt"; then
  echo "the carried CUDASW++ does not load here: building it"; mkdir -p .peers && tar xf .gpu/cs4.tar -C .peers
  bash .peers/build-on-gpu.sh > "$O/cs4build.log" 2>&1; CS4=/tmp/cudasw4
fi
(cd .gpu && timeout 200 ./test-chariot-align-end_to_end --ignored --test-threads=1) > "$O/gpu-test.log" 2>&1
echo "GPU test exit $?: $(grep -E '^test result' "$O/gpu-test.log" | tail -1)"
OUT=$O/singles B=.gpu CS4=$CS4 W=/tmp/avc STREAMED=0 ROUNDS=3 timeout 200 bash .gpu/align-vs-cudasw.sh > /dev/null 2>&1
sed -n '/== summary/,$p' "$O/singles/align-vs-cudasw.log" | grep -v "^  [0-9]" | head -40
OUT=$O/peak-a B=.gpu CS4=$CS4 W=/tmp/avc VARIANTS=final PARTS="paper20 peak" PEAK_LENS=256 CS4_KERNELS="dpx half2" timeout 150 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-a/peak.log" | grep -v "^    gi\|^    tr"
OUT=$O/peak-b B=.gpu CS4=$CS4 W=/tmp/avc VARIANTS=final PARTS=peak PEAK_LENS="128 512 768" CS4_KERNELS=dpx timeout 160 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak-b/peak.log"
tar czf "$OUT/a.tgz" -C /tmp/o a
