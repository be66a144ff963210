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
      bin=$B/chariot; [ $v = old ] && bin=$OLD/chariot
      timeout 60 "$bin" --iters 470 --repeat 5 > "$W/demo-$v-$i.log" 2>&1 || true
      echo "$v $i $(grep -E '^ +default ' "$W/demo-$v-$i.log" | awk '{print $2}') | $(grep -m1 -o 'bound check[^(]*' "$W/demo-$v-$i.log")"
    done
  done | tee "$OUT/demo.txt" || true
}
