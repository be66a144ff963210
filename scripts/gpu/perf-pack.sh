#!/usr/bin/env bash
# Profiling on the GPU machines, which have no perf: this copies this machine's perf
# and the libraries it loads (libc and libm left to the machine's own) into DIR, to be
# carried with a device call. There, record with it, bring the perf.data back (under
# $OUT), and read it here, where the binaries it sampled sit at the paths they had
# there (the repository root is the same path on both machines; put the unstripped
# binary at the path the call ran it from, e.g. .gpu/submit_probe):
#
#   bash scripts/gpu/perf-pack.sh .gpupack/perf        # here, about 30 MB (12 MB in .tar.xz)
#   # the device call, carrying .gpupack:
#   P="env LD_LIBRARY_PATH=$PWD/.gpupack/perf/lib:/usr/local/cuda/lib64 .gpupack/perf/perf"
#   $P record -F 20000 -e cpu-clock -o $OUT/run.data .gpu/submit_probe --backend cuda ...
#   # here again:
#   perf report -i run.data -n --no-children --sort comm,sym
#   perf annotate -i run.data --stdio -s SYMBOL
#
# cpu-clock is a software event (the GPU machines' guests give no hardware counters), so
# its samples land on the instruction after the one that stalled: after a locked
# instruction, read it as the wait for that instruction and the reads before it.
# What it found first: results/nvidia-h200/2026-12-01-submit-thread-profile/.
set -euo pipefail
dir=${1:?usage: perf-pack.sh DIR}
perf=$(command -v perf) || { echo "perf-pack: no perf here (apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$dir/lib"
cp "$(readlink -f "$perf")" "$dir/perf"
ldd "$(readlink -f "$perf")" | awk '/=>/ { print $3 }' | while read -r lib; do
  case "$lib" in */libc.so.*|*/libm.so.*) ;; *) cp -L "$lib" "$dir/lib/" ;; esac
done
echo "perf-pack: $(du -sh "$dir" | cut -f1) in $dir"
