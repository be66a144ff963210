#!/usr/bin/env bash
# Call A: CUDASW++ built (kept for call B), the new kernel's SASS and GPU score test, the
# kernel variants, the peak set-up at 128-512.
set -uo pipefail
O=/tmp/o/a; mkdir -p "$O/cs4bin" "$O/sass"
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p .peers && tar xf .gpu/cs4.tar -C .peers
(t0=$(date +%s); bash .peers/build-on-gpu.sh > "$O/cs4build.log" 2>&1; echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$O/cs4build.log") &
nvcc -arch=sm_90 -cubin -O3 -DSW_ONLY_DPX --resource-usage -o /tmp/new.cubin .gpu/sw_new.cu > "$O/sass/new.usage" 2>&1
cuobjdump -sass /tmp/new.cubin > "$O/sass/new.sass" 2>&1
echo "new kernel: $(grep -oE 'Used [0-9]+ registers[^,]*, [^\n]*' "$O/sass/new.usage" | head -1)"
(cd .gpu && timeout 200 ./test-chariot-align-end_to_end --ignored --exact dpx_and_portable_kernels_match_gotoh_on_gpu --test-threads=1) > "$O/gpu-test.log" 2>&1
echo "GPU test exit $?: $(grep -E '^test result' "$O/gpu-test.log" | tail -1)"
wait
tail -1 "$O/cs4build.log"
OUT=$O/variants VARIANTS="old r32g8b1 new newg16 newg4" DBS="pseudo256 paper" D2="" TESTS=0 timeout 260 bash .gpu/align-kernel-variants.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/variants/variants.log"
OUT=$O/peak VARIANTS="new" PEAK_LENS="128 256 512" PARTS=peak timeout 200 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' "$O/peak/peak.log"
cp /tmp/cudasw4/align /tmp/cudasw4/makedb "$O/cs4bin/" 2>/dev/null
ls -la "$O/cs4bin"
