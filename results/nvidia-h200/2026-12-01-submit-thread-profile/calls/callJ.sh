#!/usr/bin/env bash
# Call J: perf.data of the submit probe (cpu-clock, no call graphs), brought back to annotate.
set -u
mkdir -p "$OUT"; B=.gpu
P="env LD_LIBRARY_PATH=$PWD/$B/perf/lib:/usr/local/cuda/lib64 $B/perf/perf"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for s in "dc 10" "rnd 1024"; do
  set -- $s
  $P record -F 20000 -e cpu-clock -o $OUT/$1.data $B/submit_probe --backend cuda --shape $1 --size $2 --batches 3000 >> "$OUT/probe.txt" 2>&1
done
ls -la $OUT
