#!/usr/bin/env bash
# Call Q (one H200): perf (cpu-clock, 20 kHz) of the submit probe, call P's two builds
# (old 325dc83, new: windows sealed at the cut), the tree and the DAG-like rnd, 3,000
# batches each; the perf.data brought back (one archive) and read here.
set -u
mkdir -p "$OUT/q"; B=.gpu
P="env LD_LIBRARY_PATH=$PWD/perf/lib:/usr/local/cuda/lib64 perf/perf"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for s in "dc 10" "rnd 1024"; do
  set -- $s
  for b in new old; do
    exe=$B/submit_probe; [ $b = old ] && exe=$B/submit_probe-old
    $P record -F 20000 -e cpu-clock -o $OUT/q/$1-$b.data $exe --backend cuda --shape $1 --size $2 --batches 3000 >> "$OUT/q/probe.txt" 2>&1
  done
done
(cd $OUT && tar czf q.tgz q && rm -rf q)
ls -la $OUT
