#!/usr/bin/env bash
# The core-plus-extensions restructuring against the build before it, on one GPU: every
# GPU test of the new build, then with chariot's defaults, old and new alternated, the
# demo (DEMO_CALLS calls of 5 timed runs), seti 8192^2 (3 calls of 5), chariot-align's
# 7-query search (3 calls) and cudaFlow's shapes in the flow bench (FLOW_CALLS calls,
# default 3, of 3 rounds, chariot with defaults: replay where it pays; NEW_FLOW_ARGS is
# added to the new build's, e.g. --no-recorded so that both run the same variants). New binaries in $B (default .gpu/,
# scripts/gpu/stage.sh), old in $OLD (default .gpu-old/: chariot, chariot-align, seti and
# flow, release, of the commit before). STEPS picks steps (default "tests demo seti
# align flow"; "tabular" adds the new build's 7-query search with and without --tabular,
# alternated, TAB_CALLS calls, default 3; TAB_QUERIES=N searches N queries of
# Swiss-Prot-like lengths instead); ORDER sets the flow step's order within a call (default "old new";
# "new old" runs the new build first, to see whether a slot favours one build); writes
# under $OUT.
set -euo pipefail
STEPS=${STEPS:-tests demo seti align flow}
DEMO_CALLS=${DEMO_CALLS:-3}
FLOW_CALLS=${FLOW_CALLS:-3}
NEW_FLOW_ARGS=${NEW_FLOW_ARGS:-}
source "$(dirname "$0")/gpu-steps.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; OLD=${OLD:-.gpu-old}; W=/tmp/restructure-check; rm -rf "$W" && mkdir -p "$W"
machine_txt
if step tests; then
  echo "== GPU tests (new build)"
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
  align_alternated -o "$W/hits-{v}-{i}.tsv"
  echo "TSV digests (sorted rows, call 1): old $(sort "$W/hits-old-1.tsv" | md5sum | cut -c1-32) new $(sort "$W/hits-new-1.tsv" | md5sum | cut -c1-32)" | tee -a "$OUT/align.txt"
fi
if step tabular; then
  echo "== chariot-align search, 7 queries, new build: without and with --tabular, alternated"
  [ -f "$W/db.fa" ] || "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
  q="$W/q.fa"
  if [ -n "${TAB_QUERIES:-}" ]; then
    # TAB_QUERIES queries of Swiss-Prot-like lengths (log-normal, median about 300,
    # 30 ... 5,000 residues, seeded).
    lengths=$(awk -v n="$TAB_QUERIES" 'BEGIN { srand(7); for (i = 0; i < n; i++) { u = rand(); v = rand();
      z = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * v); l = int(exp(5.7 + 0.65 * z));
      if (l < 30) l = 30; if (l > 5000) l = 5000; printf "%s%d", (i ? "," : ""), l } }')
    "$B/chariot-align" generate --sequences 1 --out "$W/tab-unused.fa" --queries-out "$W/qtab.fa" --query-lengths "$lengths" > /dev/null 2>&1 || true
    q="$W/qtab.fa"
    echo "queries: $TAB_QUERIES, $(grep -v '>' "$q" | tr -d '\n' | wc -c) residues"
  fi
  for i in $(seq 1 "${TAB_CALLS:-3}"); do
    for v in plain tabular; do
      extra=(); [ $v = tabular ] && extra=(--tabular "$W/tab-$i.tsv")
      t0=$(date +%s.%N)
      timeout "${TAB_TIMEOUT:-120}" "$B/chariot-align" search -q "$q" -d "$W/db.fa" --no-progress -o "$W/hits-$v-$i.tsv" "${extra[@]}" > "$W/tabular-$v-$i.log" 2>&1 && rc=0 || rc=$?
      t1=$(date +%s.%N)
      echo "$v $i exit $rc: $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/tabular-$v-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
    done
  done | tee "$OUT/tabular.txt" || true
fi
if step flow; then
  echo "== flow: cudaFlow's shapes, chariot with defaults against the hand-written graph: old, new alternated"
  for i in $(seq 1 "$FLOW_CALLS"); do
    for v in ${ORDER:-old new}; do
      bin=$B/flow; extra=($NEW_FLOW_ARGS); [ $v = old ] && { bin=$OLD/flow; extra=(); }
      timeout 240 "$bin" --rounds 3 "${extra[@]}" --csv "$W/flow-$v-$i.csv" > "$W/flow-$v-$i.log" 2>&1 && rc=0 || rc=$?
      echo "$v $i exit $rc"
    done
  done | tee "$OUT/flow.txt" || true
fi
# Every log and CSV of the benchmarks in one archive (a call returns at most 8 files).
(cd "$W" && ls ./*.log ./*.csv 2>/dev/null | grep -v '^./test-' | tar czf "$OUT/logs.tgz" -T -) || true
