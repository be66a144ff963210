#!/usr/bin/env bash
# Sourced by the campaign scripts (graphs-gpu-check.sh, workspace-gpu-check.sh): what
# their steps share. Expects STEPS, OUT, B (new binaries), OLD (old binaries), W (a
# scratch directory) and DEMO_CALLS to be set.
set -euo pipefail

# step NAME: whether STEPS names it.
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }

# machine_txt: the date, the GPUs and the CPU count in $OUT/machine.txt.
machine_txt() { { date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1; }

# gpu_tests: every test executable in $B, ignored tests included; a line each in
# $OUT/gpu-tests.txt, every log in $OUT/gpu-tests.log.
gpu_tests() {
  for t in "$B"/test-*; do
    name=$(basename "$t")
    (cd "$B" && timeout 240 "./$name" --include-ignored --test-threads=1) > "$W/$name.log" 2>&1 && rc=0 || rc=$?
    echo "$name exit $rc: $(grep -E '^test result' "$W/$name.log" | tail -1)"
  done | tee "$OUT/gpu-tests.txt" || true
  for f in "$W"/test-*.log; do echo "===== $(basename "$f")"; cat "$f"; done > "$OUT/gpu-tests.log"
}

# demo_alternated: the demo with defaults, old and new alternated, DEMO_CALLS calls of 5
# timed runs each; the median line of each call in $OUT/demo.txt.
demo_alternated() {
  for i in $(seq 1 "$DEMO_CALLS"); do
    for v in old new; do
      bin=$B/chariot-demo; [ $v = old ] && bin=$OLD/chariot-demo
      timeout 60 "$bin" --iters 470 --repeat 5 > "$W/demo-$v-$i.log" 2>&1 || true
      echo "$v $i $(grep -E '^ +default ' "$W/demo-$v-$i.log" | awk '{print $2}') | $(grep -m1 -o 'bound check[^(]*' "$W/demo-$v-$i.log")"
    done
  done | tee "$OUT/demo.txt" || true
}

# seti_alternated: seti 8192^2 with defaults, old and new alternated, 3 calls of 5 timed
# runs each; the median line of each call in $OUT/seti.txt.
seti_alternated() {
  for i in 1 2 3; do
    for v in old new; do
      bin=$B/seti; [ $v = old ] && bin=$OLD/seti
      timeout 120 "$bin" --no-incore --repeat 5 --streams auto > "$W/seti-$v-$i.log" 2>&1 || true
      echo "$v $i $(grep -E '^ +auto ' "$W/seti-$v-$i.log" | head -1 | awk '{print $2}') | $(grep -m1 -o 'bound check[^(]*' "$W/seti-$v-$i.log" || true)"
    done
  done | tee "$OUT/seti.txt" || true
}

# align_alternated [ARGS...]: chariot-align's 7-query search of the paper-shaped database
# (generated once into $W), old and new alternated, 3 calls, each with ARGS added (use
# {v} and {i} in them for the build and the call); search time, GCUPS and the whole
# process's time in $OUT/align.txt.
align_alternated() {
  [ -f "$W/db.fa" ] || "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
  for i in 1 2 3; do
    for v in old new; do
      bin=$B/chariot-align; [ $v = old ] && bin=$OLD/chariot-align
      local extra=()
      for a in "$@"; do a=${a//\{v\}/$v}; extra+=("${a//\{i\}/$i}"); done
      t0=$(date +%s.%N)
      timeout 60 "$bin" search -q "$W/q.fa" -d "$W/db.fa" --no-progress --top 1 "${extra[@]}" > "$W/align-$v-$i.log" 2>&1 || true
      t1=$(date +%s.%N)
      echo "$v $i $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/align-$v-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
    done
  done | tee "$OUT/align.txt" || true
}
