#!/usr/bin/env bash
# The flow bench's peers, built from their sources on the GPU machine and run in the
# same command as chariot: CUDASTF (NVIDIA CCCL's sequential task flow, stream_ctx and
# graph_ctx) and Taskflow's tf::cudaGraph on the flow shapes
# (crates/chariot-studies/peers/), alternated with chariot's flow bench, and CUDASTF's
# own tiled Cholesky example (cudax/examples/stf/linear_algebra/07-cholesky.cu).
#
# Here, before the device call:
#   bash scripts/gpu/stage.sh                  # chariot's binaries in .gpu/ (the flow bench)
#   bash crates/chariot-studies/peers/pack-sources.sh CCCL_GIT_DIR TASKFLOW_GIT_DIR
#                                              # .peers/carry/peer-sources.tar.xz, about 2.3 MB
# The device call (one H200), carrying both:
#   carry: [".gpu", ".peers/carry"]
#   OUT=$OUT bash scripts/gpu/flow-peers.sh
#
# OWN=1 runs every variant of every program in a process of its own (a CUDA graph's
# nodes run slower once 17 streams of a context have had work, and chariot's schedulers
# and CUDASTF's stream pools bring many: results/nvidia-h200/2026-11-29-graphs-and-stream-count/),
# the processes' order rotating each call; chariot's host dispatch is left out there.
#
# STEPS picks steps (default "build flow cholesky summary"): build compiles the three programs
# with nvcc in parallel (their logs and times in build.txt); flow runs, CALLS times
# (default 3), the flow bench (chariot with defaults, chariot with replay off, the
# hand-written CUDA graph), stf-flow and taskflow-flow, the order rotating each call,
# ROUNDS timed rounds each (default 5), every run in a CSV with the bench's columns;
# cholesky runs CUDASTF's example at each N:NB of CHOL (default N = 8192, 16384, 32768
# with NB = 256, 512, 1024), CHOL_CALLS times (default 3), and checks its result once
# (CHECK_RESULT=1 at the first size). summary tabulates the flow CSVs (medians over every
# call's timed rounds, each variant over the flow bench's CUDA graph) and the Cholesky
# runs (medians over the calls). B names the staged binaries (default .gpu), NVCC the
# compiler (default nvcc on PATH, else /usr/local/cuda/bin/nvcc), W the scratch folder
# (default /tmp/flow-peers). Writes under $OUT: machine.txt, build.txt, flow.txt,
# cholesky.txt, summary.txt and logs.tgz (every log and CSV).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
STEPS=${STEPS:-build flow cholesky summary}
B=${B:-.gpu}
SRC=${SRC:-.peers/carry/peer-sources.tar.xz}
W=${W:-/tmp/flow-peers}
CALLS=${CALLS:-3}
ROUNDS=${ROUNDS:-5}
CHOL=${CHOL:-8192:256 8192:512 8192:1024 16384:256 16384:512 16384:1024 32768:256 32768:512 32768:1024}
CHOL_CALLS=${CHOL_CALLS:-3}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=crates/chariot-studies/peers
step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
mkdir -p "$OUT" "$W"

{ date -u; nvidia-smi -L 2>&1 || true; echo "cpus: $(nproc)"; "$NVCC" --version 2>&1 | tail -2 || true; } > "$OUT/machine.txt"

if step build; then
  echo "== build: stf-flow, taskflow-flow, stf-cholesky (nvcc, in parallel)"
  [ -f "$SRC" ] || { echo "flow-peers: $SRC is missing: run pack-sources.sh here and carry .peers/carry" >&2; exit 1; }
  rm -rf "$W/src" && mkdir -p "$W/src"
  # Python's tarfile where tar has no xz.
  tar -xJf "$SRC" -C "$W/src" 2>/dev/null \
    || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$SRC" "$W/src"
  C=$W/src/cccl T=$W/src/taskflow
  # CUDASTF's build line (its headers ahead of the toolkit's own CCCL).
  STF=(-O3 -std=c++17 -arch=sm_90 --extended-lambda --expt-relaxed-constexpr -rdc=true
       -I"$C/cudax/include" -I"$C/libcudacxx/include" -I"$C/cub" -I"$C/thrust")
  build() { # NAME COMMAND...: runs the command, its output in $W/build-NAME.log
    local name=$1 t0 t1 rc; shift
    t0=$(date +%s.%N)
    "$@" > "$W/build-$name.log" 2>&1 && rc=0 || rc=$?
    t1=$(date +%s.%N)
    echo "$name exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", b-a}') s: $*" > "$W/build-$name.txt"
  }
  build stf-flow "$NVCC" "${STF[@]}" "$P/stf_flow.cu" "$P/flow_kernel.cu" -lcuda -o "$W/stf-flow" &
  build taskflow-flow "$NVCC" -O3 -std=c++20 -arch=sm_90 -I"$T" "$P/taskflow_flow.cu" "$P/flow_kernel.cu" -o "$W/taskflow-flow" &
  build stf-cholesky "$NVCC" "${STF[@]}" "$C/cudax/examples/stf/linear_algebra/07-cholesky.cu" \
    -lcublas -lcusolver -lcurand -lcuda -o "$W/stf-cholesky" &
  wait
  { cat "$W/src/COMMITS"; cat "$W"/build-*.txt; } | tee "$OUT/build.txt"
fi

if step flow && [ "${OWN:-0}" = 1 ]; then
  echo "== flow: every variant in a process of its own; $CALLS calls of $ROUNDS timed rounds, the order rotating"
  rm -f "$W"/flow-*.csv "$W"/flow-*.log
  runs=("chariot-graph $B/flow --variants graph" "chariot-recorded $B/flow --variants recorded"
        "chariot-loop $B/flow --variants chariot" "stf-stream $W/stf-flow --variants stf-stream"
        "stf-graph $W/stf-flow --variants stf-graph" "stf-graph-exec $W/stf-flow --variants stf-graph-exec"
        "nvcc-graph $W/stf-flow --variants cuda-graph-nvcc" "taskflow-graph $W/taskflow-flow --variants taskflow-graph"
        "taskflow-rebuild $W/taskflow-flow --variants taskflow-rebuild")
  n=${#runs[@]}
  for i in $(seq 1 "$CALLS"); do
    for k in $(seq 0 $((n - 1))); do
      read -r v exe rest <<< "${runs[$(( (i - 1 + k) % n ))]}"
      if [ -x "$exe" ]; then
        # shellcheck disable=SC2086 # $rest is the variant's flags
        timeout 240 "$exe" $rest --rounds "$ROUNDS" --csv "$W/flow-$v-$i.csv" > "$W/flow-$v-$i.log" 2>&1 && rc=0 || rc=$?
      else
        rc="missing ($exe)"
      fi
      echo "$v $i exit $rc"
    done
  done | tee "$OUT/flow.txt" || true
elif step flow; then
  echo "== flow: the flow bench, stf-flow, taskflow-flow; $CALLS calls of $ROUNDS timed rounds, the order rotating"
  rm -f "$W"/flow-*.csv "$W"/flow-*.log
  progs=(chariot stf taskflow)
  for i in $(seq 1 "$CALLS"); do
    for k in 0 1 2; do
      v=${progs[$(( (i - 1 + k) % 3 ))]}
      case $v in
        chariot) cmd=("$B/flow" --rounds "$ROUNDS") ;;
        stf) cmd=("$W/stf-flow" --rounds "$ROUNDS") ;;
        taskflow) cmd=("$W/taskflow-flow" --rounds "$ROUNDS") ;;
      esac
      if [ -x "${cmd[0]}" ]; then
        timeout 240 "${cmd[@]}" --csv "$W/flow-$v-$i.csv" > "$W/flow-$v-$i.log" 2>&1 && rc=0 || rc=$?
      else
        rc="missing (${cmd[0]})"
      fi
      echo "$v $i exit $rc"
    done
  done | tee "$OUT/flow.txt" || true
fi

if step cholesky; then
  echo "== cholesky: CUDASTF's 07-cholesky example, N:NB in ($CHOL), $CHOL_CALLS calls"
  rm -f "$W"/chol-*.log
  first=1
  for i in $(seq 1 "$CHOL_CALLS"); do
    for nb in $CHOL; do
      n=${nb%%:*} b=${nb##*:}
      check=0; [ $first = 1 ] && check=1 && first=0
      if [ -x "$W/stf-cholesky" ]; then
        CHECK_RESULT=$check timeout 120 "$W/stf-cholesky" "$n" "$b" > "$W/chol-$n-$b-$i.log" 2>&1 && rc=0 || rc=$?
      else
        rc="missing"
      fi
      echo "N $n NB $b call $i check $check exit $rc: $(grep -m1 -o 'ELAPSED: .*' "$W/chol-$n-$b-$i.log" 2>/dev/null || true)"
    done
  done | tee "$OUT/cholesky.txt" || true
fi

if step summary; then
  echo "== summary"
  python3 - "$W" > "$OUT/summary.txt" <<'PY' || echo "flow-peers: the summary failed" >&2
import csv, glob, os, re, statistics, sys
w = sys.argv[1]
runs = {}  # (shape, iters) -> variant -> [wall_ns]
meta = {}
for path in sorted(glob.glob(os.path.join(w, "flow-*.csv"))):
    with open(path) as f:
        for r in csv.DictReader(f):
            if int(r["round"]) == 0:
                continue
            key = (r["shape"], int(r["iters"]))
            meta[key] = (r["size"], r["nodes"], r["edges"])
            runs.setdefault(key, {}).setdefault(r["variant"], []).append(int(r["wall_ns"]))
order = ["lc", "ep", "dc", "mr", "dag", "rnd"]
variants = []
for v in ["chariot", "chariot-host", "cuda-graph", "stf-stream", "stf-graph", "stf-graph-exec", "taskflow-graph",
          "taskflow-rebuild", "cuda-graph-nvcc"]:
    if any(v in d for d in runs.values()):
        variants.append(v)
for d in runs.values():
    for v in d:
        if v not in variants:
            variants.append(v)
print("flow shapes: medians of every call's timed rounds, ms (launch or first call to synchronize, build apart)")
print("and each over the flow bench's hand-written CUDA graph (cuda-graph); nodes and edges as the CSVs give them")
print(f"{'shape':<5} {'iters':>6} {'nodes':>6} {'edges':>6} | " + " ".join(f"{v:>16}" for v in variants))
for key in sorted(runs, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1])):
    d = runs[key]
    med = {v: statistics.median(d[v]) / 1e6 for v in d}
    g = med.get("cuda-graph")
    cells = []
    for v in variants:
        if v not in med:
            cells.append(f"{'-':>16}")
        elif g:
            cells.append(f"{med[v]:>9.3f} {med[v] / g:>5.2f}x")
        else:
            cells.append(f"{med[v]:>16.3f}")
    print(f"{key[0]:<5} {key[1]:>6} {meta[key][1]:>6} {meta[key][2]:>6} | " + " ".join(cells))
# chariot (defaults, and its recorded graph) over each peer: at most 1 where chariot is
# at most the peer's time.
peers = [v for v in variants if v not in ("chariot", "chariot-host", "cuda-graph", "chariot-recorded")]
for ours, what in [("chariot", "defaults"), ("chariot-recorded", "recorded graph")]:
    if not peers or not any(ours in d for d in runs.values()):
        continue
    print(f"\nchariot ({what}) over each peer, medians as above")
    print(f"{'shape':<5} {'iters':>6} | " + " ".join(f"{v:>16}" for v in peers))
    for key in sorted(runs, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1])):
        d = runs[key]
        if ours not in d:
            continue
        c = statistics.median(d[ours])
        print(f"{key[0]:<5} {key[1]:>6} | " + " ".join(
            f"{c / statistics.median(d[v]):>16.2f}" if v in d else f"{'-':>16}" for v in peers))
# Every program must have run the same graphs: one (nodes, edges) per shape.
seen = {}
for path in sorted(glob.glob(os.path.join(w, "flow-*.csv"))):
    with open(path) as f:
        for r in csv.DictReader(f):
            seen.setdefault((r["shape"], r["size"]), set()).add((r["nodes"], r["edges"]))
bad = {k: v for k, v in seen.items() if len(v) > 1}
print("graphs: " + ("every program ran the same node and edge counts" if not bad else f"MISMATCH {bad}"))
chol = {}
for path in glob.glob(os.path.join(w, "chol-*.log")):
    m = re.match(r"chol-(\d+)-(\d+)-(\d+)\.log", os.path.basename(path))
    t = re.search(r"ELAPSED: ([0-9.]+) ms, GFLOPS: ([0-9.]+)", open(path).read())
    if m and t:
        chol.setdefault((int(m[1]), int(m[2])), []).append((float(t[1]), float(t[2])))
if chol:
    print("\nCUDASTF's tiled Cholesky example (PDPOTRF between events, tiles filled on the GPU): medians over the calls")
    print(f"{'N':>6} {'NB':>5} {'calls':>5} {'ms':>10} {'TFLOP/s':>8}")
    for (n, b), v in sorted(chol.items()):
        print(f"{n:>6} {b:>5} {len(v):>5} {statistics.median(x[0] for x in v):>10.2f} "
              f"{statistics.median(x[1] for x in v) / 1e3:>8.2f}")
PY
  cat "$OUT/summary.txt"
fi

# Every log and CSV in one archive (a device call returns at most 8 files).
(cd "$W" && ls ./*.log ./*.csv ./*.txt 2>/dev/null | tar czf "$OUT/logs.tgz" -T -) || true
