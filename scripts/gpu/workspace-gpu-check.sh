#!/usr/bin/env bash
# The restructuring on nvidia-h100-x1: the workspace (runtime crate, studies crate, the real
# dispatcher generic over its device) against the code before it (commit d229f22), same
# commands, alternated: every GPU test of the new code (the runtime's GPU suite and bad
# input, the studies' in-order pipeline and bad input, the seti example's, chariot-align
# end to end), then with chariot's defaults the demo (4 calls x 5 timed runs each), seti
# 8192^2 (3 calls x 5) and the 7-query alignment search (3 calls). Binaries: new in $B
# (default .gpu/, scripts/gpu/stage.sh), old in $OLD (default .gpu-old/: `cargo build
# --release --bin chariot --bin chariot-align --example seti` in a worktree of d229f22,
# stripped). Writes under $OUT. STEPS picks steps (default "tests demo seti align");
# DEMO_CALLS the demo's calls per build (default 4).
set -euo pipefail
STEPS=${STEPS:-tests demo seti align}   # also: prepared (the CUDASW++ comparison: makedb, FASTA vs prepared), tabular
DEMO_CALLS=${DEMO_CALLS:-4}
source "$(dirname "$0")/gpu-steps.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=${OLD:-.gpu-old}; W=/tmp/ws-check; rm -rf "$W" && mkdir -p "$W"
machine_txt
if step tests; then
echo "== GPU tests (new code)"
gpu_tests
fi
if step demo; then
echo "== demo, defaults, 48 x 16 MiB, 470 rounds: old, new alternated"
demo_alternated
fi
if step seti; then
echo "== seti 8192^2, defaults (auto), 5 timed runs a call: old, new alternated"
seti_alternated
fi
if step align; then
echo "== chariot-align search, 7 queries: old, new alternated"
align_alternated
fi
if step prepared; then
echo "== chariot-align makedb once, then 7 queries: old FASTA, new FASTA, new prepared, alternated"
[ -f "$W/db.fa" ] || "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1
cat "$W/db.fa" "$W/q.fa" > /dev/null || true   # both in the page cache, as the issue's figures assume
t0=$(date +%s.%N)
"$B/chariot-align" makedb -d "$W/db.fa" -o "$W/db.cadb" --no-progress > "$W/makedb.log" 2>&1 && rc=0 || rc=$?
t1=$(date +%s.%N)
echo "makedb exit $rc: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s, $(stat -c %s "$W/db.cadb") bytes" | tee "$OUT/prepared.txt"
for i in 1 2 3; do
  for v in old-fasta new-fasta new-prepared; do
    bin=$B/chariot-align; db=$W/db.fa
    [ $v = old-fasta ] && bin=$OLD/chariot-align
    [ $v = new-prepared ] && db=$W/db.cadb
    t0=$(date +%s.%N)
    timeout 60 "$bin" search -q "$W/q.fa" -d "$db" --no-progress --top 1 --out "$W/$v-$i.tsv" > "$W/align-$v-$i.log" 2>&1 || true
    t1=$(date +%s.%N)
    echo "$v $i $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/align-$v-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
  done
done | tee -a "$OUT/prepared.txt" || true
echo "TSV digests (sorted rows of call 1):" | tee -a "$OUT/prepared.txt"
for v in old-fasta new-fasta new-prepared; do echo "$v $(sort "$W/$v-1.tsv" | md5sum | cut -c1-32)"; done | tee -a "$OUT/prepared.txt"
cp "$W"/align-new-prepared-1.log "$OUT/" || true
fi
if step tabular; then
echo "== chariot-align 7 queries on the prepared database, --top 10: plain, then with --tabular, alternated"
[ -f "$W/db.fa" ] || "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1
[ -f "$W/db.cadb" ] || "$B/chariot-align" makedb -d "$W/db.fa" -o "$W/db.cadb" --no-progress > /dev/null 2>&1
for i in 1 2 3; do
  for v in plain tabular; do
    extra=""; [ $v = tabular ] && extra="--tabular $W/hits-$i.m8"
    t0=$(date +%s.%N)
    timeout 120 "$B/chariot-align" search -q "$W/q.fa" -d "$W/db.cadb" --no-progress --top 10 $extra > "$W/tab-$v-$i.log" 2>&1 && rc=0 || rc=$?
    t1=$(date +%s.%N)
    echo "$v $i exit $rc: $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/tab-$v-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
  done
done | tee "$OUT/tabular.txt" || true
{ echo "rows: $(wc -l < "$W/hits-1.m8")"; head -20 "$W/hits-1.m8"; } | tee -a "$OUT/tabular.txt" || true
fi
cp "$W"/*-new-1.log "$OUT/" 2>/dev/null || true
