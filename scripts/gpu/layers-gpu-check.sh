#!/usr/bin/env bash
# The restructuring on nvidia-h100-x1: the restructured runtime (layers one way, chariot-align a
# crate of its own, DriverError) against the code before it (commit 61bbe2f), same
# commands, alternated: the GPU tests on the new code, then the demo with chariot's
# defaults (kernel rounds fixed, 5 timed runs per call, 4 calls each) and the 7-query
# alignment search (3 calls each). Binaries: new in $B (default .gpu/, scripts/gpu/stage.sh),
# old in $OLD (default .gpu-old/: `cargo build --release --bin chariot --bin chariot-align`
# in a worktree of 61bbe2f, stripped). Writes under $OUT.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=${OLD:-.gpu-old}; W=/tmp/layers; rm -rf "$W" && mkdir -p "$W"
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
echo "== GPU tests (new code)"
(cd "$B" && timeout 200 ./test-gpu --include-ignored --test-threads=1) > "$OUT/gpu-tests.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$OUT/gpu-tests.log"
grep -E "^test result|FAILED|panicked" "$OUT/gpu-tests.log" | head -5 || true
echo "== demo, defaults, 48 x 16 MiB, 470 rounds: old, new alternated"
for i in 1 2 3 4; do
  for v in old new; do
    bin=$B/chariot-demo; [ $v = old ] && bin=$OLD/chariot-demo
    timeout 60 "$bin" --iters 470 --repeat 5 > "$W/demo-$v-$i.log" 2>&1 || true
    echo "$v $i $(grep -E '^ +default ' "$W/demo-$v-$i.log" | awk '{print $2}')"
  done
done | tee "$OUT/demo.txt" || true
echo "== chariot-align search, 7 queries: old, new alternated"
"$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
for i in 1 2 3; do
  for v in old new; do
    bin=$B/chariot-align; [ $v = old ] && bin=$OLD/chariot-align
    t0=$(date +%s.%N)
    timeout 60 "$bin" search -q "$W/q.fa" -d "$W/db.fa" --no-progress --top 1 > "$W/align-$v-$i.log" 2>&1 || true
    t1=$(date +%s.%N)
    echo "$v $i $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/align-$v-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
  done
done | tee "$OUT/align.txt" || true
cp "$W"/demo-new-1.log "$W"/align-new-1.log "$OUT/" || true
