#!/usr/bin/env bash
# Call E: the GPU tests of the final build (a batch's windows past S lanes where its
# windows on S lanes spanned at least 1.5 µs a task); then the flow bench with each variant in a process of its
# own, alternated call by call: the hand-written graph, chariot's defaults of the build
# before (old) and of this build (new), this build's recorded graphs.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/csv
{ date -u; nvidia-smi -L; nproc; } > $OUT/machine.txt 2>&1
for t in replay recorded gpu resident; do
  timeout 300 .gpu/test-$t --include-ignored --test-threads 1 > $OUT/test-$t.log 2>&1; echo "test-$t rc $?" >> $OUT/tests.txt
  grep "test result" $OUT/test-$t.log >> $OUT/tests.txt
done
G=.gpu
for call in 1 2 3 4; do
  steps=(graph old new recorded)
  for k in 0 1 2 3; do
    step=${steps[$(( (k + call) % 4 ))]}
    case $step in
      graph) $G/flow-old --variants graph --csv $OUT/csv/graph-$call.csv > $OUT/csv/graph-$call.txt 2>&1 ;;
      recorded) $G/flow-new --variants recorded --csv $OUT/csv/flow-new-recorded-$call.csv > $OUT/csv/recorded-$call.txt 2>&1 ;;
      *) $G/flow-$step --variants chariot --windows $OUT/csv/windows-$step-$call.csv --csv $OUT/csv/flow-$step-chariot-$call.csv > $OUT/csv/$step-$call.txt 2>&1 ;;
    esac
  done
done
for call in 1 2 3 4; do for b in old new; do cp $OUT/csv/graph-$call.csv $OUT/csv/flow-$b-graph-$call.csv; done; done
python3 .gpu/flow-summary.py $OUT/csv old new > $OUT/old-new.txt 2>&1
cd $OUT && tar czf flow-csv.tgz csv && tar czf test-logs.tgz test-*.log && rm -rf csv test-*.log
