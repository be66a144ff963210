#!/usr/bin/env bash
# Builds of the flow bench against each other on one machine: the GPU tests of one build,
# then the flow bench's variants (default: the per-iteration loop, `chariot`, and the
# hand-written CUDA graph, `graph`), each variant in a process of its own, the builds'
# order rotated process by process (two builds: a b b a a b b a ...).
#
# Usage: OUT=DIR [TESTS=DIR] [PROCS=5] [ROUNDS=9] [VARIANTS="chariot graph"] \
#          bash scripts/gpu/ab-flow.sh NAME=DIR [NAME=DIR ...]
#   NAME=DIR  a build: DIR holds its `flow` (staged by scripts/gpu/stage.sh or as
#             results READMEs say); NAME labels its files (flow-NAME-VARIANTn.csv).
#   TESTS     a folder holding test-replay, test-recorded, test-gpu and test-resident,
#             run first with --include-ignored, one thread.
#   PROCS     processes of each variant of each build.
# Writes $OUT/summary.txt (each step's exit and time, the tests' results), machine.txt,
# logs.tar.xz (every log and CSV); `scripts/gpu/flow-summary.py $OUT A B` tabulates two
# builds. Keeps going past a failed step; exits 2 on bad usage.
set -euo pipefail
usage() { sed -n 2,16p "$0" >&2; exit 2; }
[ -n "${OUT:-}" ] && [ $# -ge 1 ] || usage
names=(); dirs=()
for a in "$@"; do
  case "$a" in
    *=*) names+=("${a%%=*}"); dirs+=("${a#*=}") ;;
    *) echo "ab-flow.sh: $a: expected NAME=DIR" >&2; usage ;;
  esac
  [ -x "${a#*=}/flow" ] || { echo "ab-flow.sh: ${a#*=}/flow: not an executable" >&2; exit 2; }
done
PROCS=${PROCS:-5}; ROUNDS=${ROUNDS:-9}; VARIANTS=${VARIANTS:-chariot graph}
mkdir -p "$OUT"; S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1 || true
t0=$(date +%s)
if [ -n "${TESTS:-}" ]; then
  for t in test-replay test-recorded test-gpu test-resident; do
    timeout 150 "$TESTS/$t" --include-ignored --test-threads=1 > "$OUT/$t.log" 2>&1 && rc=0 || rc=$?
    echo "$t exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
  done
fi
n=${#names[@]}; turn=0
for ((p = 0; p < PROCS; p++)); do
  for ((i = 0; i < n; i++)); do
    # Round p runs the builds from the (p mod n)-th on: two builds go a b, b a, a b...
    j=$(( (p + i) % n ))
    turn=$((turn + 1)); name=${names[$j]}; d=${dirs[$j]}
    for var in $VARIANTS; do
      timeout 100 "$d/flow" --variants "$var" --rounds "$ROUNDS" --csv "$OUT/flow-$name-$var$turn.csv" \
        > "$OUT/flow-$name-$var$turn.log" 2>&1 && rc=0 || rc=$?
      echo "flow $var $name turn $turn exit $rc at $(( $(date +%s) - t0 )) s" | tee -a "$S"
    done
  done
done
grep -h "test result" "$OUT"/test-*.log >> "$S" 2>/dev/null || true
(cd "$OUT" && shopt -s nullglob && files=(./*.log ./*.csv) && tar cJf logs.tar.xz "${files[@]}" && rm -f "${files[@]}") || true
