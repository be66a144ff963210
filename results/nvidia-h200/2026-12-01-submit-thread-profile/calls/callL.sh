#!/usr/bin/env bash
# Call L: perf.data of the submit probe, new and old builds (cpu-clock), brought back to annotate.
set -u
mkdir -p "$OUT"; B=.gpu
P="env LD_LIBRARY_PATH=$PWD/$B/perf/lib:/usr/local/cuda/lib64 $B/perf/perf"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for s in "dc 10" "rnd 1024"; do
  set -- $s
  for b in new old; do
    exe=$B/submit_probe; [ $b = old ] && exe=$B/submit_probe-old
    $P record -F 20000 -e cpu-clock -o $OUT/$1-$b.data $exe --backend cuda --shape $1 --size $2 --batches 3000 >> "$OUT/probe.txt" 2>&1
  done
done
grep cuda $OUT/probe.txt
