#!/usr/bin/env bash
# Call E (one H200): the build of 37e8899 (tapered last cuts; HEAD as staged). 1. The runtime's GPU tests
# (replay, recorded graphs, the GPU suite). 2. The flow shapes against every peer, each
# variant of each program in a process of its own (scripts/gpu/flow-peers.sh, OWN=1,
# 2 calls of 5 timed rounds; chariot's loop timed after its warm-up settles). 3. The
# cholesky bench at D = 1, N = 8 k, 16 k, 32 k, its default tiles, 2 rounds, with
# cuSOLVER potrf in the same process.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
for t in replay recorded gpu; do
  step test-$t timeout 240 .gpu/test-$t --include-ignored --test-threads 1
done
grep "^test result" "$L" >> "$S"
t0=$(date +%s)
OWN=1 CALLS=2 ROUNDS=5 STEPS="build flow summary" B=.gpu W="$PWD/.peers/w" OUT="$OUT/peers" bash scripts/gpu/flow-peers.sh > "$OUT/peers.log" 2>&1
echo "flow-peers exit $? in $(( $(date +%s) - t0 )) s" >> "$S"
(cd .peers/w && tar czf "$OUT/flow-logs.tgz" flow-*.csv flow-*.log 2>/dev/null)
cp "$OUT/peers/summary.txt" "$OUT/flow-summary.txt"; cp "$OUT/peers/build.txt" "$OUT/build.txt"; rm -rf "$OUT/peers"
step cholesky timeout 240 .gpu/cholesky --n 8192,16384,32768 --rounds 2 --csv "$OUT/cholesky.csv"
sed -n '/== cholesky:/,$p' "$L" | sed -n '/^medians/,$p' >> "$S"
