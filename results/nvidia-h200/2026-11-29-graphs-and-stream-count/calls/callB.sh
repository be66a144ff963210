#!/usr/bin/env bash
# Call B: (1) the stream-count probe (which use of streams slows a graph's nodes; a fresh
# process per mode and count); (2) the flow bench with its variants in one process
# (`shared`, as every earlier campaign ran it) and each variant in a process of its own
# (`own`), alternated call by call; and chariot (defaults + recorded) with S = 16 (the
# H200's default) against S = 32 in processes of their own.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/csv
{ date -u; nvidia-smi -L; nproc; nvcc --version | tail -2; } > $OUT/machine.txt 2>&1
P=.gpu/probe
nvcc -O3 -std=c++17 -arch=sm_90 -o $P/stream_count_probe $P/stream_count_probe.cu
{ for n in 14 15 16 17 24; do for m in conc seq idle; do $P/stream_count_probe $m $n; done; done
  for n in 14 15; do for m in null memcpy; do $P/stream_count_probe $m $n; done; done
  $P/stream_count_probe events 64; } > $OUT/stream-count.txt 2>&1
F=.gpu/flow
for call in 1 2 3; do
  steps=(shared own s16 s32)
  for k in 0 1 2 3; do
    step=${steps[$(( (k + call) % 4 ))]}
    case $step in
      shared) $F --csv $OUT/csv/flow-shared-$call.csv > $OUT/csv/shared-$call.txt 2>&1 ;;
      own) for v in graph recorded chariot host; do
             $F --variants $v --csv $OUT/csv/flow-own-$v-$call.csv > $OUT/csv/own-$v-$call.txt 2>&1; done ;;
      s16) $F --variants chariot,recorded --streams 16 --csv $OUT/csv/flow-s16-$call.csv > $OUT/csv/s16-$call.txt 2>&1 ;;
      s32) $F --variants chariot,recorded --streams 32 --csv $OUT/csv/flow-s32-$call.csv > $OUT/csv/s32-$call.txt 2>&1 ;;
    esac
  done
done
python3 .gpu/flow-summary.py $OUT/csv shared own > $OUT/shared-own.txt 2>&1
python3 .gpu/flow-summary.py $OUT/csv s16 s32 > $OUT/s16-s32.txt 2>&1
cd $OUT && tar czf flow-csv.tgz csv && rm -rf csv
