#!/usr/bin/env bash
# The graph probes (crates/chariot-studies/peers/), built with nvcc on the GPU machine:
# kernel_origin_probe (the flow bench's hand-written graph with its kernel compiled by
# nvcc and launched through the runtime API, by NVRTC with chariot's options and by nvcc
# into a cubin, both through the driver API, alternated; and whether the two cubins'
# SASS is the same), stream_count_probe (how many streams with one launch each slow a
# CUDA graph's nodes afterwards: a fresh process per mode and count) and
# stream_use_probe (which uses of 8 streams do: a fresh process per mode).
#
# The device call (one GPU), from the repository root:
#   OUT=$OUT bash scripts/gpu/graph-probes.sh
# Writes under $OUT: machine.txt, kernel-origin.txt, sass-same.txt, stream-count.txt,
# stream-use.txt.
# ROUNDS (default 21) timed launches per variant; COUNTS (default "14 15 16 17 24") the
# stream counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
ROUNDS=${ROUNDS:-21}
COUNTS=${COUNTS:-14 15 16 17 24}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=crates/chariot-studies/peers
W=${W:-/tmp/graph-probes}
mkdir -p "$OUT" "$W"
{ date -u; nvidia-smi -L 2>&1 || true; echo "cpus: $(nproc)"; "$NVCC" --version 2>&1 | tail -2 || true; } > "$OUT/machine.txt"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -cubin -o "$W/flow_kernel.cubin" "$P/flow_kernel.cu"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$W/kernel_origin_probe" "$P/kernel_origin_probe.cu" -lcuda -lnvrtc
"$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$W/stream_count_probe" "$P/stream_count_probe.cu"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$W/stream_use_probe" "$P/stream_use_probe.cu" -lcuda
# The kernel-origin probe reads flow_kernel.cubin and writes nvrtc.cubin in its folder.
(cd "$W" && ./kernel_origin_probe "$ROUNDS") > "$OUT/kernel-origin.txt" 2>&1
sass() { "$(dirname "$NVCC")/cuobjdump" -sass "$1" | grep -o '/\*[0-9a-f]\{4\}\*/ .*;' | sed 's|/\*[0-9a-f]*\*/||'; }
if cmp -s <(sass "$W/nvrtc.cubin") <(sass "$W/flow_kernel.cubin"); then
  echo "the NVRTC cubin's SASS and nvcc's are the same ($(sass "$W/nvrtc.cubin" | wc -l) instructions)"
else
  echo "the NVRTC cubin's SASS and nvcc's differ"; diff <(sass "$W/nvrtc.cubin") <(sass "$W/flow_kernel.cubin") || true
fi > "$OUT/sass-same.txt" 2>&1
{ for n in $COUNTS; do for m in conc seq idle; do "$W/stream_count_probe" $m "$n"; done; done
  for n in 14 15; do for m in null memcpy; do "$W/stream_count_probe" $m "$n"; done; done
  "$W/stream_count_probe" events 64; } > "$OUT/stream-count.txt" 2>&1
for m in conc few8 many8 many8sync many2 many4 many1 deep malloc tevents nevents wait hostfn thread query; do
  "$W/stream_use_probe" $m
done > "$OUT/stream-use.txt" 2>&1
