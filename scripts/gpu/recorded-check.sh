#!/usr/bin/env bash
# Recorded graphs and the window lists, on one GPU: the flow bench of this build and of
# the build before the restructuring alternated (FLOW_CALLS calls of 3 rounds each;
# chariot with defaults, chariot's recorded graph, host dispatch, the hand-written CUDA
# graph), then every GPU test executable of this build but those named in SKIP_TESTS
# (default: chariot-align's end to end, run by its own campaign). New binaries in $B
# (default .gpu/, scripts/gpu/stage.sh), old in $OLD (default .gpu-old/: its flow).
# Summary: scripts/gpu/flow-summary.py over the CSVs. Writes under $OUT.
set -euo pipefail
FLOW_CALLS=${FLOW_CALLS:-2}
SKIP_TESTS=${SKIP_TESTS:-test-chariot-align-end_to_end}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=${OLD:-.gpu-old}; W=/tmp/recorded-check; rm -rf "$W" && mkdir -p "$W"
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1 || true
echo "== flow: old and new alternated, $FLOW_CALLS calls"
for i in $(seq 1 "$FLOW_CALLS"); do
  for v in old new; do
    bin=$B/flow; [ $v = old ] && bin=$OLD/flow
    timeout 200 "$bin" --rounds 3 --csv "$W/flow-$v-$i.csv" > "$W/flow-$v-$i.log" 2>&1 && rc=0 || rc=$?
    echo "$v $i exit $rc"
  done
done | tee "$OUT/flow.txt" || true
python3 "$(dirname "$0")/flow-summary.py" "$W" > "$OUT/flow-summary.txt" 2>&1 || true
echo "== GPU tests (this build; skipped: $SKIP_TESTS)"
for t in "$B"/test-*; do
  name=$(basename "$t")
  case " $SKIP_TESTS " in *" $name "*) continue;; esac
  (cd "$B" && timeout 240 "./$name" --include-ignored --test-threads=1) > "$W/$name.log" 2>&1 && rc=0 || rc=$?
  echo "$name exit $rc: $(grep -E '^test result' "$W/$name.log" | tail -1)"
done | tee "$OUT/gpu-tests.txt" || true
for f in "$W"/test-*.log; do echo "===== $(basename "$f")"; cat "$f"; done > "$OUT/gpu-tests.log" 2>/dev/null || true
(cd "$W" && ls ./*.log ./*.csv 2>/dev/null | grep -v '^./test-' | tar czf "$OUT/logs.tgz" -T -) || true
