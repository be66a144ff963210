#!/usr/bin/env bash
# Many queries against the paper-shaped database on the GPU machine: chariot-align against
# CUDASW++ 4.0 in one command, queries a second over the whole process.
#
# Data (kept in $W while the machine is warm): the paper-shaped database (536,000
# sequences, 404.9 M residues, `chariot-align generate`, the same as align-vs-cudasw.sh's
# and align-peak.sh's), prepared by each tool's makedb (timed apart), and NQ (1,000)
# queries of Swiss-Prot-like lengths: log-normal, median about 300, 30 ... 5,000 residues,
# seeded (Python's random.Random(7): 372,187 residues for 1,000, 101 of them of at most 128).
# Then ROUNDS (3) rounds, the order reversed every other round, each run its own process
# with no tuning flag:
#   chariot-align search -q Q -d paper.cadb --top 10           (config "default")
#   the same with --tabular (BLAST tabular rows of every query's top 10)   (config "tabular")
#   the same with each extra argument list of EXTRA (config "x1", "x2", ...; default none)
#   CUDASW++ align --query Q --db cs4db/db --top 10 --uploadFull with each kernel of
#   CS4_KERNELS (dpx: --dpx; half2: its default kernels)
# Per run: the process's wall time (start to exit: what a user waits), queries a second
# over it, and GCUPS as each tool reports it. The summary gives medians and chariot-align's
# queries a second over the better CUDASW++ kernel's, and checks each query's best score
# against CUDASW++'s (round 1).
#
# Binaries: $B/chariot-align (scripts/gpu/stage.sh), CUDASW++ in $CS4 (align, makedb;
# carried prebuilt, or built by .peers/build-on-gpu.sh). Writes under $OUT:
# many.csv (round,tool,config,gcups,wall_s,qps), many.log (this output and the summary),
# logs.tgz (every run's output).
#
#   OUT=$OUT CS4=.gpu/cs4bin bash scripts/gpu/align-many-queries.sh
#
# Knobs: NQ (1000), ROUNDS (3), CS4_KERNELS ("dpx half2"), TABULAR (1: the --tabular runs),
# EXTRA (extra chariot-align argument lists, separated by ";"), B (.gpu),
# W (/tmp/align-many), CS4 (/tmp/cudasw4), TIMEOUT per run (300 s).
set -euo pipefail
B=${B:-.gpu}; W=${W:-/tmp/align-many}; CS4=${CS4:-/tmp/cudasw4}; NQ=${NQ:-1000}; ROUNDS=${ROUNDS:-3}
CS4_KERNELS=${CS4_KERNELS:-"dpx half2"}; TABULAR=${TABULAR:-1}; EXTRA=${EXTRA:-}; TIMEOUT=${TIMEOUT:-300}
: "${OUT:?set OUT to a directory}"
CSV=$OUT/many.csv; L=$W/logs
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

chariot_gcups() { grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$1" | awk '{print $3}' || true; }
cudasw_gcups() { grep -oE 'Total time: [0-9.eE+-]+ s, [0-9.eE+-]+ GCUPS' "$1" | tail -1 | awk '{print $5}' || true; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }

run_chariot() { # round config [args...]
  local r=$1 c=$2 log=$L/chariot-$2-$1.log t0 t1 rc w; shift 2
  t0=$(date +%s.%N)
  timeout "$TIMEOUT" "$B/chariot-align" search -q "$W/q.fa" -d "$W/paper.cadb" --no-progress --top 10 "$@" \
    > "$L/chariot-$c-$r.hits" 2> "$log" && rc=0 || rc=$?
  t1=$(date +%s.%N); w=$(elapsed "$t0" "$t1")
  echo "$r,chariot-align,$c,$(chariot_gcups "$log"),$w,$(awk -v n="$NQ" -v w="$w" 'BEGIN{printf "%.2f", n/w}')" >> "$CSV"
  printf '  %s chariot-align %-8s exit %s: %8s GCUPS, process %8s s\n' "$r" "$c" "$rc" "$(chariot_gcups "$log")" "$w"
}

run_cudasw() { # round kernel
  local r=$1 k=$2 log=$L/cudasw4-$2-$1.log t0 t1 rc w args
  case $k in dpx) args="--dpx" ;; half2) args="" ;; *) echo "CS4_KERNELS: unknown $k (dpx, half2)"; return 1 ;; esac
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # word list
  timeout "$TIMEOUT" "$CS4/align" --query "$W/q.fa" --db "$W/cs4db/db" --top 10 --uploadFull --prefetchDBFile \
    --mat blosum62 $args --verbose --tsv --of "$L/cudasw4-$k-$r.tsv" > "$log" 2>&1 && rc=0 || rc=$?
  t1=$(date +%s.%N); w=$(elapsed "$t0" "$t1")
  echo "$r,cudasw4,$k,$(cudasw_gcups "$log"),$w,$(awk -v n="$NQ" -v w="$w" 'BEGIN{printf "%.2f", n/w}')" >> "$CSV"
  printf '  %s cudasw4       %-8s exit %s: %8s GCUPS, process %8s s\n' "$r" "$k" "$rc" "$(cudasw_gcups "$log")" "$w"
  [ "$r" = 1 ] || rm -f "$L/cudasw4-$k-$r.tsv"
}

round() { # r
  local r=$1 k i=0 x runs=()
  runs+=("chariot default")
  [ "$TABULAR" = 1 ] && runs+=("chariot tabular")
  if [ -n "$EXTRA" ]; then
    IFS=';' read -ra xs <<< "$EXTRA"
    for x in "${xs[@]}"; do i=$((i + 1)); runs+=("chariot x$i $x"); done
  fi
  for k in $CS4_KERNELS; do runs+=("cudasw $k"); done
  if [ $((r % 2)) = 0 ]; then
    local rev=(); for ((i = ${#runs[@]} - 1; i >= 0; i--)); do rev+=("${runs[$i]}"); done; runs=("${rev[@]}")
  fi
  for x in "${runs[@]}"; do
    # shellcheck disable=SC2086 # the extra arguments are a word list
    set -- $x
    case $1 in
      chariot) case $2 in
          default) run_chariot "$r" default ;;
          tabular) run_chariot "$r" tabular --tabular "$W/tab-$r.tsv" ;;
          *) c=$2; shift 2; run_chariot "$r" "$c" "$@" ;;
        esac ;;
      cudasw) run_cudasw "$r" "$2" ;;
    esac
  done
}

summary() {
python3 - "$CSV" "$L" "$NQ" <<'PY'
import csv, os, re, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]))); logs = sys.argv[2]; nq = int(sys.argv[3])
g = {}
for r in rows:
    try: g.setdefault((r["tool"], r["config"]), []).append((float(r["wall_s"]), float(r["gcups"] or "nan")))
    except ValueError: pass
print(f"  {'tool':<14}{'config':<9}{'runs':>5}{'process s':>11}{'min':>9}{'max':>9}{'queries/s':>11}{'GCUPS':>9}")
med = {}
for k in sorted(g):
    ws = [w for w, _ in g[k]]; gs = [x for _, x in g[k]]
    med[k] = statistics.median(ws)
    print(f"  {k[0]:<14}{k[1]:<9}{len(ws):>5}{med[k]:>11.2f}{min(ws):>9.2f}{max(ws):>9.2f}{nq / med[k]:>11.2f}{statistics.median(gs):>9.1f}")
cs = {k[1]: v for k, v in med.items() if k[0] == "cudasw4"}
if cs:
    best = min(cs, key=cs.get)
    for k, v in sorted(med.items()):
        if k[0] == "chariot-align":
            print(f"  chariot-align {k[1]:<9} queries a second x{cs[best] / v:.3f} CUDASW++ {best}'s")
    if ("chariot-align", "default") in med and ("chariot-align", "tabular") in med:
        t, d = med[("chariot-align", "tabular")], med[("chariot-align", "default")]
        print(f"  --tabular: process time x{t / d:.3f} the default's")
# Best score of each query, round 1: each chariot-align configuration's hits (stdout)
# against CUDASW++'s TSV (its gap of k costs open + (k - 1) extend: chariot-align's
# --gap-open 10 is CUDASW++'s default 11).
for f in sorted(os.listdir(logs)):
    m = re.match(r"chariot-(\S+)-1\.hits$", f)
    if not m: continue
    ours = {q: int(s) for q, s in re.findall(r"query (\S+) \(\d+ residues\): top \d+\n[^\n]*\n\s+1\s+(-?\d+)", open(os.path.join(logs, f)).read())}
    for t in sorted(os.listdir(logs)):
        if not (t.startswith("cudasw4-") and t.endswith("-1.tsv")): continue
        theirs = {}
        for line in open(os.path.join(logs, t)):
            c = line.rstrip("\n").split("\t")
            if len(c) >= 5 and c[3] == "0": theirs[c[2].split()[0].lstrip(">")] = int(c[4])
        diff = [q for q in ours if theirs.get(q) != ours[q]]
        print(f"  best score per query, chariot-align {m.group(1)} against {t}: {len(ours) - len(diff)} of {len(ours)} the same" +
              "".join(f"\n    {q}: {ours[q]} against {theirs.get(q)}" for q in diff[:5]))
PY
}

main() {
  mkdir -p "$OUT" "$L" "$W"
  echo "round,tool,config,gcups,wall_s,qps" > "$CSV"
  { date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } 2>&1
  [ -x "$B/chariot-align" ] || { echo "no $B/chariot-align"; return 1; }
  if [ ! -x "$CS4/align" ] || [ ! -x "$CS4/makedb" ]; then
    [ -f .peers/build-on-gpu.sh ] || { echo "no $CS4/align and no .peers/build-on-gpu.sh to build it"; return 1; }
    bash .peers/build-on-gpu.sh > "$L/cudasw4-build.log" 2>&1 || { tail -20 "$L/cudasw4-build.log"; return 1; }
  fi
  local t0
  t0=$(date +%s.%N)
  [ -s "$W/db.fa" ] || "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --quiet || return 1
  echo "database generated in $(elapsed "$t0" "$(date +%s.%N)") s"
  # Python's seeded generator gives the same lengths on every machine (awk's srand(7) did
  # not: three GPU machines drew 360,034, 374,707 and 377,558 residues from it).
  lengths=$(python3 -c 'import math, random, sys
r = random.Random(7)
print(",".join(str(min(5000, max(30, int(math.exp(5.7 + 0.65 * r.gauss(0, 1)))))) for _ in range(int(sys.argv[1]))))' "$NQ")
  "$B/chariot-align" generate --sequences 1 --out "$W/unused.fa" --queries-out "$W/q.fa" --query-lengths "$lengths" \
    --quiet || return 1
  echo "queries: $NQ, $(grep -v '>' "$W/q.fa" | tr -d '\n' | wc -c) residues"
  t0=$(date +%s.%N)
  [ -s "$W/paper.cadb" ] || "$B/chariot-align" makedb -d "$W/db.fa" -o "$W/paper.cadb" --no-progress > "$L/makedb.log" 2>&1 || return 1
  echo "chariot-align makedb: $(elapsed "$t0" "$(date +%s.%N)") s"
  t0=$(date +%s.%N)
  if [ -z "$(ls -A "$W/cs4db" 2>/dev/null)" ]; then
    mkdir -p "$W/cs4db"
    "$CS4/makedb" "$W/db.fa" "$W/cs4db/db" > "$L/cudasw4-makedb.log" 2>&1 || { tail -5 "$L/cudasw4-makedb.log"; return 1; }
  fi
  echo "CUDASW++ makedb: $(elapsed "$t0" "$(date +%s.%N)") s"
  local r
  for r in $(seq 1 "$ROUNDS"); do round "$r"; done
  echo "== medians"
  summary
}

mkdir -p "$OUT"
rc=0; main 2>&1 | tee "$OUT/many.log" || rc=$?
(cd "$W" && tar czf "$OUT/logs.tgz" logs) || true
exit "$rc"
