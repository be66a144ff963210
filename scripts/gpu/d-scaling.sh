#!/usr/bin/env bash
# The D-scaling study on a four-GPU machine (nvidia-h200-x4): chariot with its defaults at
# D = 1, 2 and 4, each D alternated with the others inside every step, binaries staged in
# $B (default .gpu/, scripts/gpu/stage.sh). STEPS picks steps (default all):
#   probe    the multi-device CUDA graph probe (scripts/gpu/probes/, built here by nvcc);
#   demo     the balanced 48 x 16 MiB loop with 1, 2, 4 GPUs visible, 3 calls (the demo
#            itself uses one GPU, the builder's default: not a D-scaling figure);
#   seti     the two-phase FFT 8192^2, --gpus D, 3 calls;
#   align    chariot-align's 7-query search of the paper-shaped database, --gpus D, 3 calls;
#   cholesky tiled Cholesky N = 16 k, 32 k, tiles 1,024 and 2,048, D = 1, 2, 4, against
#            cuSOLVER potrf at D = 1 (3 rounds);
#   flow     MUSTARD's random graph of 4,096 nodes at 1,000 and 10,000 spin iterations, and
#            every flow shape with its defaults, at D = 1, 2, 4 (chariot, its recorded
#            graph; the hand-written CUDA graph on one GPU).
# (The image bench runs on one GPU only: not here.)
#   cholesky-small  tiled Cholesky at D = 1 with tiles of 256 ... 1,024 (N = 8 k ... 32 k), the sizes
#            CUDASTF's example runs in flow-peers.sh, against cuSOLVER potrf (3 rounds).
# Writes under $OUT: summary.txt (the machine, then every step's lines), logs.tgz with every log and CSV.
set -euo pipefail
STEPS=${STEPS:-probe demo seti align cholesky cholesky-small flow}
source "$(dirname "$0")/gpu-steps.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0   # chariot uses no NCCL; never NVLink multicast on shared machines
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}; W=/tmp/d-scaling; rm -rf "$W" && mkdir -p "$W"
PROBE_SRC=$(cd "$(dirname "$0")" && pwd)/probes/multi_device_graph.cu
S="$OUT/summary.txt"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"; } > "$S" 2>&1
visible() { seq -s, 0 $(($1 - 1)); }  # visible D: "0,1,...,D-1"

if step probe; then
  echo "== multi-device CUDA graph probe"
  { /usr/local/cuda/bin/nvcc -O3 -arch=sm_90 "$PROBE_SRC" -o "$W/mdg" && timeout 120 "$W/mdg" 256 20000; } 2>&1 | tee -a "$S" || true
fi
if step demo; then
  echo "== demo, defaults, 48 x 16 MiB: D = 1, 2, 4 alternated, 3 calls of 3 timed runs"
  for i in 1 2 3; do
    for d in 1 2 4; do
      CUDA_VISIBLE_DEVICES=$(visible $d) timeout 90 "$B/chariot-demo" --repeat 3 > "$W/demo-d$d-$i.log" 2>&1 || true
      echo "D=$d $i $(grep -E '^ +default ' "$W/demo-d$d-$i.log" | head -1) | serial $(grep -m1 -oE 'serial[^|]*' "$W/demo-d$d-$i.log" | head -1)"
    done
  done | tee -a "$S" || true
fi
if step seti; then
  echo "== seti 8192^2, defaults: D = 1, 2, 4 alternated, 3 calls of 5 timed runs"
  for i in 1 2 3; do
    for d in 1 2 4; do
      timeout 120 "$B/seti" --gpus $d --no-incore --repeat 5 --streams auto > "$W/seti-d$d-$i.log" 2>&1 || true
      echo "D=$d $i $(grep -E '^ +auto ' "$W/seti-d$d-$i.log" | head -1)"
    done
  done | tee -a "$S" || true
fi
if step align; then
  echo "== chariot-align search, 7 queries, paper-shaped database: D = 1, 2, 4 alternated, 3 calls"
  "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
  for i in 1 2 3; do
    for d in 1 2 4; do
      t0=$(date +%s.%N)
      timeout 90 "$B/chariot-align" search -q "$W/q.fa" -d "$W/db.fa" --gpus $d --no-progress -o "$W/hits-d$d-$i.tsv" > "$W/align-d$d-$i.log" 2>&1 && rc=0 || rc=$?
      t1=$(date +%s.%N)
      echo "D=$d $i exit $rc: $(grep -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/align-d$d-$i.log" | head -1), process $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
    done
  done | tee -a "$S" || true
  for d in 2 4; do
    echo "hits D=$d against D=1 (call 1, rows sorted): $(cmp -s <(sort "$W/hits-d1-1.tsv") <(sort "$W/hits-d$d-1.tsv") && echo identical || echo DIFFERENT)"
    diff <(sort "$W/hits-d1-1.tsv") <(sort "$W/hits-d$d-1.tsv") | head -n 8 || true
  done | tee -a "$S"
fi
if step cholesky; then
  echo "== tiled Cholesky: D = 1, 2, 4 against cuSOLVER potrf (D = 1), 3 rounds"
  timeout 420 "$B/cholesky" --n 16384,32768 --tile 1024,2048 --gpus 1,2,4 --rounds 3 --csv "$W/cholesky.csv" > "$W/cholesky.log" 2>&1 || true
  tail -n 40 "$W/cholesky.log" | tee -a "$S" || true
fi
if step cholesky-small; then
  echo "== tiled Cholesky, D = 1, tiles of 256 ... 1,024, against cuSOLVER potrf (3 rounds)"
  for nt in 8192:256,512,1024 16384:512,1024 32768:1024; do
    n=${nt%%:*}; t=${nt#*:}
    timeout 300 "$B/cholesky" --n "$n" --tile "$t" --gpus 1 --rounds 3 --csv "$W/cholesky-small-$n.csv" > "$W/cholesky-small-$n.log" 2>&1 || true
    tail -n 12 "$W/cholesky-small-$n.log"
  done | tee -a "$S" || true
fi
if step flow; then
  echo "== flow: MUSTARD rnd 4096 at 1,000 and 10,000 iterations, then every shape, D = 1, 2, 4"
  for d in 1 2 4; do
    timeout 200 "$B/flow" --shapes rnd --size rnd=4096 --iters 1000,10000 --rounds 5 --gpus $d --csv "$W/flow-rnd-d$d.csv" > "$W/flow-rnd-d$d.log" 2>&1 && rc=0 || rc=$?
    echo "rnd4096 D=$d exit $rc"
  done | tee -a "$S" || true
  for d in 1 2 4; do
    timeout 200 "$B/flow" --rounds 3 --gpus $d --csv "$W/flow-all-d$d.csv" > "$W/flow-all-d$d.log" 2>&1 && rc=0 || rc=$?
    echo "all shapes D=$d exit $rc"
  done | tee -a "$S" || true
  for f in "$W"/flow-*.log; do echo "===== $(basename "$f")"; grep -vE '^\s*$' "$f" | tail -n 40; done >> "$S" || true
fi
# Every log and CSV in one archive (a call returns at most 8 files).
(cd "$W" && ls ./*.log ./*.csv ./hits-*-1.tsv 2>/dev/null | grep -v "flow-all-.*csv" | tar czf "$OUT/logs.tgz" -T -) || true
ls -la "$OUT"
