#!/usr/bin/env bash
# The graph probes (crates/chariot-studies/peers/), built with nvcc on the GPU machine:
# kernel_origin_probe (the flow bench's hand-written graph with its kernel compiled by
# nvcc and launched through the runtime API, by NVRTC with chariot's options and by nvcc
# into a cubin, both through the driver API, alternated; and whether the two cubins'
# SASS is the same), stream_count_probe (how many streams with one launch each slow a
# CUDA graph's nodes afterwards: a fresh process per mode and count) and
# stream_use_probe (which uses of 8 streams do: a fresh process per mode) and
# stream_escape_probe (whether any way of instantiating or launching a graph runs it at
# full speed once those uses slowed it: a fresh process per mode) and
# sink_address_probe (whether the chain's speed depends on where its nodes' sink lies).
#
# The device call (one GPU), from the repository root:
#   OUT=$OUT bash scripts/gpu/graph-probes.sh
# STEPS (default "origin count use escape sink") picks the probes.
# Writes under $OUT: machine.txt, kernel-origin.txt, sass-same.txt, stream-count.txt,
# stream-use.txt, stream-escape.txt, sink-address.txt.
# ROUNDS (default 21) timed launches per variant; COUNTS (default "14 15 16 17 24") the
# stream counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
ROUNDS=${ROUNDS:-21}
COUNTS=${COUNTS:-14 15 16 17 24}
STEPS=${STEPS:-origin count use escape sink}
step() { [[ " $STEPS " == *" $1 "* ]]; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=crates/chariot-studies/peers
W=${W:-/tmp/graph-probes}
mkdir -p "$OUT" "$W"
{ date -u; nvidia-smi -L 2>&1 || true; echo "cpus: $(nproc)"; "$NVCC" --version 2>&1 | tail -2 || true; } > "$OUT/machine.txt"
build() { "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$W/$1" "$P/$1.cu" "${@:2}"; }
if step origin; then
  "$NVCC" -O3 -std=c++17 -arch=sm_90 -cubin -o "$W/flow_kernel.cubin" "$P/flow_kernel.cu"
  build kernel_origin_probe -lcuda -lnvrtc
  # The kernel-origin probe reads flow_kernel.cubin and writes nvrtc.cubin in its folder.
  (cd "$W" && ./kernel_origin_probe "$ROUNDS") > "$OUT/kernel-origin.txt" 2>&1
  sass() { "$(dirname "$NVCC")/cuobjdump" -sass "$1" | grep -o '/\*[0-9a-f]\{4\}\*/ .*;' | sed 's|/\*[0-9a-f]*\*/||'; }
  if cmp -s <(sass "$W/nvrtc.cubin") <(sass "$W/flow_kernel.cubin"); then
    echo "the NVRTC cubin's SASS and nvcc's are the same ($(sass "$W/nvrtc.cubin" | wc -l) instructions)"
  else
    echo "the NVRTC cubin's SASS and nvcc's differ"; diff <(sass "$W/nvrtc.cubin") <(sass "$W/flow_kernel.cubin") || true
  fi > "$OUT/sass-same.txt" 2>&1
fi
if step count; then
  build stream_count_probe
  { for n in $COUNTS; do for m in conc seq idle; do "$W/stream_count_probe" $m "$n"; done; done
    for n in 14 15; do for m in null memcpy; do "$W/stream_count_probe" $m "$n"; done; done
    "$W/stream_count_probe" events 64; } > "$OUT/stream-count.txt" 2>&1
fi
if step use; then
  build stream_use_probe -lcuda
  for m in conc few8 many8 many8sync many2 many4 many1 deep malloc tevents nevents wait hostfn thread query; do
    "$W/stream_use_probe" $m
  done > "$OUT/stream-use.txt" 2>&1
fi
if step escape; then
  build stream_escape_probe
  # Twice over, the modes in turn: a mode whose instantiation or launch fails prints
  # the failed call instead of its line.
  for r in 1 2; do
    for m in same reinst upload prio-hi prio-lo nodeprio devlaunch legacy perthread blocking settle captured trigger-after; do
      "$W/stream_escape_probe" $m || true
    done
  done > "$OUT/stream-escape.txt" 2>&1
fi
if step sink; then
  build sink_address_probe
  for r in 1 2 3; do "$W/sink_address_probe" 5; done > "$OUT/sink-address.txt" 2>&1
fi
