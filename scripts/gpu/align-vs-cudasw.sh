#!/usr/bin/env bash
# The CUDASW++ comparison on the GPU machine: chariot-align against CUDASW++ 4.0 in one command.
#
# Builds CUDASW++ (.peers/build-on-gpu.sh: CUDASW++ 4.0's public sources at commit 37a394c,
# https://github.com/asbschmidt/CUDASW4, and a static zlib, unpacked into the git-ignored
# .peers/ beside a script that builds them; carried with `carry: [".gpu", ".peers"]`;
# about 1-2 minutes, skipped while the machine keeps /tmp/cudasw4), generates the
# paper-shaped database (536,000 sequences, 404.9 M residues) and the queries of 63 ... 5000 residues with `chariot-align generate`
# (kept in $W while the machine is warm), times both tools' one-time preparation
# (`chariot-align makedb`, CUDASW++'s `makedb`), then for $ROUNDS rounds alternates
# chariot-align (defaults: --kernel auto, DPX on an H100; prepared database; the
# database uploaded to the GPU before the search, --db-on-gpu auto), chariot-align with
# the database streamed (--db-on-gpu no: config "streamed") and CUDASW++ `align`
# (--dpx, database uploaded to the GPU once per process) on each single query and on
# the 7 queries together, plus chariot-align --kernel portable on the 7 queries once a
# round. Each run is its own process: GCUPS as each tool reports it (chariot-align:
# cells / search wall time, over the database on the GPU by default, as CUDASW++'s,
# or streamed from the page cache with --db-on-gpu no; CUDASW++: its --verbose "Total
# time" line, database already on the GPU) and the process's wall time (start to exit:
# CUDA context, NVRTC or module load, database open and upload, output).
#
# Binaries: chariot-align in $B (default .gpu/, scripts/gpu/stage.sh). Writes under $OUT:
# align-vs-cudasw.csv (round,tool,config,query,gcups,wall_s), align-vs-cudasw.log (this
# output), logs/ (every run's output, round 1's result files) and a medians summary at
# the end of the log. About 4-5 minutes on an H100 (CUDASW++ build included).
#
#   OUT=$OUT bash scripts/gpu/align-vs-cudasw.sh          # on the GPU machine
#   bash scripts/gpu/align-vs-cudasw.sh --self-test       # anywhere: the parsers on sample text
#
# Knobs: ROUNDS (3), B (.gpu), W (/tmp/align-vs-cudasw: data kept between calls),
# CS4 (/tmp/cudasw4: where build-on-gpu.sh puts CUDASW++), TIMEOUT per run (300 s),
# STREAMED (1; 0 leaves out the streamed and --kernel portable runs),
# GPU_TESTS=1 to first run chariot-align's #[ignore]d GPU test of every DPX and portable
# score against Gotoh ($B/test-chariot-align-end_to_end, staged by scripts/gpu/stage.sh;
# about 1-2 minutes more).
set -euo pipefail
ROUNDS=${ROUNDS:-3}; B=${B:-.gpu}; W=${W:-/tmp/align-vs-cudasw}; CS4=${CS4:-/tmp/cudasw4}
TIMEOUT=${TIMEOUT:-300}; STREAMED=${STREAMED:-1}
LENS="63 127 255 511 1023 2047 5000"

# ---- parsers (also run by --self-test) ----
# chariot-align search: "backend cuda (...), D = 1, S = 16, order lf, 48 slots: 1.770 s, 2064.3 GCUPS"
chariot_gcups() { grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$1" | awk '{print $3}' || true; }
# CUDASW++ align --verbose: "Total time: 0.0912 s, 5432.1 GCUPS" (after every query's "Scan time" line)
cudasw_gcups() { grep -oE 'Total time: [0-9.eE+-]+ s, [0-9.eE+-]+ GCUPS' "$1" | tail -1 | awk '{print $5}' || true; }
# chariot-align search: "  kernel dpx (16-bit scores, ...; 0 scores re-run in 32 bits)"
chariot_kernel() { grep -m1 -E '^  kernel ' "$1" | sed 's/^  kernel //' || true; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }

# Medians per (tool, config, query) from the CSV, chariot-align's default over CUDASW++,
# and the best score of each query by both tools (round 1's outputs).
summary() { # CSV LOGDIR
python3 - "$1" "$2" <<'PY'
import csv, os, re, statistics, sys
path, logs = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path)))
def num(x):
    try: return float(x)
    except ValueError: return None
groups = {}
for r in rows:
    groups.setdefault((r["tool"], r["config"], r["query"]), []).append(r)
def med(rs, key):
    v = [num(r[key]) for r in rs if num(r[key]) is not None]
    return statistics.median(v) if v else None
def fmt(v, d):
    return "-" if v is None else f"{v:.{d}f}"
print(f"medians over rounds ({path}):")
print(f"  {'tool':<14}{'config':<10}{'query':<7}{'runs':>5}{'GCUPS':>10}{'wall s':>9}")
order = lambda k: (k[0], k[1], int(k[2][1:]) if k[2][1:].isdigit() else 10**9)
for k in sorted(groups, key=order):
    rs = groups[k]
    print(f"  {k[0]:<14}{k[1]:<10}{k[2]:<7}{len(rs):>5}{fmt(med(rs, 'gcups'), 1):>10}{fmt(med(rs, 'wall_s'), 2):>9}")
queries = sorted({k[2] for k in groups if k[1] != "makedb"}, key=lambda q: order(("", "", q)))
for cfg in ("default", "streamed"):
    if not any(k[1] == cfg and k[0] == "chariot-align" for k in groups): continue
    print(f"chariot-align ({cfg}) / CUDASW++ (--dpx), medians:")
    print(f"  {'query':<7}{'GCUPS ratio':>12}{'wall ratio':>12}")
    for q in queries:
        c, s = groups.get(("chariot-align", cfg, q)), groups.get(("cudasw4", "dpx", q))
        if not c or not s: continue
        g = [med(c, "gcups"), med(s, "gcups")]; w = [med(c, "wall_s"), med(s, "wall_s")]
        gr = g[0] / g[1] if None not in g and g[1] else None
        wr = w[0] / w[1] if None not in w and w[1] else None
        print(f"  {q:<7}{fmt(gr, 3):>12}{fmt(wr, 3):>12}")
p = groups.get(("chariot-align", "portable", "all7")); d = groups.get(("chariot-align", "default", "all7"))
if p and d and med(p, "gcups") and med(d, "gcups"):
    print(f"chariot-align 7 queries, default over --kernel portable: GCUPS x{med(d, 'gcups') / med(p, 'gcups'):.3f}")
# Best score of each query, round 1: chariot-align's log and CUDASW++'s TSV (whose
# built-in gap costs for BLOSUM62 are open 11, extend 1, as chariot-align's defaults).
ours, theirs = {}, {}
cl = os.path.join(logs, "chariot-default-all7-1.log")
if os.path.exists(cl):
    for m in re.finditer(r"query (\S+) \((\d+) residues\): top \d+\n[^\n]*\n\s+1\s+(-?\d+)\s+(\S+)", open(cl).read()):
        ours[m.group(1)] = (int(m.group(3)), m.group(4))
ct = os.path.join(logs, "cudasw4-all7-1.tsv")
if os.path.exists(ct):
    for line in open(ct):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 7 and f[3] == "0":
            theirs[f[2].split()[0].lstrip(">")] = (int(f[4]), f[6].split()[0])
if ours or theirs:
    print("best score per query (round 1): chariot-align | CUDASW++")
    for q in sorted(set(ours) | set(theirs), key=lambda q: order(("", "", q))):
        a, b = ours.get(q), theirs.get(q)
        same = "same" if a and b and a[0] == b[0] else "DIFFERENT"
        print(f"  {q:<7}{str(a[0]) + ' ' + a[1] if a else '-':>22} | {str(b[0]) + ' ' + b[1] if b else '-':<22} {same}")
PY
}

self_test() {
  local d; d=$(mktemp -d)
  cat > "$d/c.log" <<'EOF'
database /tmp/w/db.cadb (prepared, 1 bytes): 536000 sequences, 404900667 residues, longest 35213, 66 chunks (indexed in 0.01 s)
backend cuda (NVIDIA H100 80GB HBM3), D = 1, S = 16, order lf, 48 slots: 1.770 s, 2064.3 GCUPS
  kernel dpx (16-bit scores, two subjects a lane group; 0 scores re-run in 32 bits)
  stage           sum (ms)    busy (ms)

query q63 (63 residues): top 2
  rank    score  subject
     1       67  db0334898
     2       60  db0000001

query q127 (127 residues): top 2
  rank    score  subject
     1       72  db0400699
     2       70  db0000002
EOF
  cat > "$d/s.log" <<'EOF'
Processing query 0 ... Done. Scan time: 0.0212 s, 1203.3 GCUPS
Processing query 1 ... Done. Scan time: 0.0301 s, 1708.35 GCUPS
Total time: 0.0513 s, 1.50138e+03 GCUPS
EOF
  printf 'Query number\tQuery length\tQuery header\tResult number\tResult score\tReference length\tReference header\tReference ID in DB\n0\t63\tq63\t0\t67\t310\tdb0334898\t5\n0\t63\tq63\t1\t60\t20\tdb0000001\t6\n1\t127\tq127\t0\t71\t99\tdb0400699\t7\n' > "$d/cudasw4-all7-1.tsv"
  cp "$d/c.log" "$d/chariot-default-all7-1.log"
  local fail=0
  [ "$(chariot_gcups "$d/c.log")" = 2064.3 ] || { echo "chariot_gcups: $(chariot_gcups "$d/c.log")"; fail=1; }
  [ "$(cudasw_gcups "$d/s.log")" = 1.50138e+03 ] || { echo "cudasw_gcups: $(cudasw_gcups "$d/s.log")"; fail=1; }
  [ "$(chariot_kernel "$d/c.log")" = "dpx (16-bit scores, two subjects a lane group; 0 scores re-run in 32 bits)" ] || { echo "chariot_kernel"; fail=1; }
  [ "$(elapsed 10.25 12.5)" = 2.250 ] || { echo "elapsed"; fail=1; }
  { echo "round,tool,config,query,gcups,wall_s"
    echo "0,chariot-align,makedb,-,,1.47"; echo "0,cudasw4,makedb,-,,9.80"
    for r in 1 2 3; do
      echo "$r,chariot-align,default,q63,$((2000 + r)).5,1.2$r"; echo "$r,cudasw4,dpx,q63,$((4000 + r)),2.0$r"
      echo "$r,chariot-align,default,all7,2100,3.1"; echo "$r,cudasw4,dpx,all7,1.50138e+03,2.5"
      echo "$r,chariot-align,portable,all7,1500,3.9"; echo "$r,chariot-align,default,q5000,,"
    done; } > "$d/x.csv"
  summary "$d/x.csv" "$d" | tee "$d/summary.txt"
  grep -q "q63   .*3 *2002.5 *1.22" "$d/summary.txt" || { echo "summary medians"; fail=1; }
  grep -q "q63 .*0.500" "$d/summary.txt" || { echo "summary ratio"; fail=1; }
  grep -q "default over --kernel portable: GCUPS x1.400" "$d/summary.txt" || { echo "summary portable"; fail=1; }
  grep -q "q127 .*72 db0400699 | 71 db0400699 .*DIFFERENT" "$d/summary.txt" || { echo "summary scores"; fail=1; }
  rm -rf "$d"
  [ $fail = 0 ] && echo "self-test passed" || { echo "self-test FAILED"; return 1; }
}

if [ "${1:-}" = --self-test ]; then self_test; exit $?; fi

# ---- the campaign ----
: "${OUT:?set OUT to a directory}"
CSV=$OUT/align-vs-cudasw.csv; L=$OUT/logs
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

row() { echo "$1,$2,$3,$4,$5,$6" >> "$CSV"; }

run_chariot() { # round config query fasta [extra args]
  local r=$1 cfg=$2 q=$3 f=$4; shift 4
  local log=$L/chariot-$cfg-$q-$r.log t0 t1 rc g
  t0=$(date +%s.%N)
  timeout "$TIMEOUT" "$B/chariot-align" search -q "$f" -d "$W/db.cadb" --no-progress --top 10 "$@" > "$log" 2>&1 && rc=0 || rc=$?
  t1=$(date +%s.%N)
  g=$(chariot_gcups "$log")
  row "$r" chariot-align "$cfg" "$q" "$g" "$(elapsed "$t0" "$t1")"
  printf '  %s chariot-align %-8s %-5s exit %s: %8s GCUPS, process %6s s; kernel %s\n' \
    "$r" "$cfg" "$q" "$rc" "${g:--}" "$(elapsed "$t0" "$t1")" "$(chariot_kernel "$log")"
}

run_cudasw() { # round query fasta
  local r=$1 q=$2 f=$3
  local log=$L/cudasw4-$q-$r.log res=$W/cudasw4-$q.tsv t0 t1 rc g
  t0=$(date +%s.%N)
  timeout "$TIMEOUT" "$CS4/align" --query "$f" --db "$W/cs4db/db" --top 10 --uploadFull --prefetchDBFile \
    --mat blosum62 --dpx --verbose --tsv --of "$res" > "$log" 2>&1 && rc=0 || rc=$?
  t1=$(date +%s.%N)
  g=$(cudasw_gcups "$log")
  [ "$r" = 1 ] && cp "$res" "$L/cudasw4-$q-1.tsv" 2>/dev/null || true
  row "$r" cudasw4 dpx "$q" "$g" "$(elapsed "$t0" "$t1")"
  printf '  %s cudasw4       %-8s %-5s exit %s: %8s GCUPS, process %6s s\n' "$r" dpx "$q" "$rc" "${g:--}" "$(elapsed "$t0" "$t1")"
}

main() {
  mkdir -p "$OUT" "$L" "$W"
  echo "round,tool,config,query,gcups,wall_s" > "$CSV"
  { date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; echo "cpus: $(nproc)"; } 2>&1
  [ -x "$B/chariot-align" ] || { echo "no $B/chariot-align: run scripts/gpu/stage.sh and carry .gpu"; return 1; }
  if [ "${GPU_TESTS:-0}" = 1 ]; then
    echo "== GPU test: every DPX and portable score against Gotoh"
    (cd "$B" && timeout 600 ./test-chariot-align-end_to_end --ignored --exact dpx_and_portable_kernels_match_gotoh_on_gpu \
      --test-threads=1) > "$L/gpu-test.log" 2>&1 && rc=0 || rc=$?
    echo "  exit $rc: $(grep -E '^test result' "$L/gpu-test.log" | tail -1)"
  fi
  echo "== CUDASW++ 4.0: build (skipped where $CS4 holds it)"
  local t0 t1 rc
  t0=$(date +%s.%N)
  if [ ! -x "$CS4/align" ] || [ ! -x "$CS4/makedb" ]; then
    [ -f .peers/build-on-gpu.sh ] || { echo "no .peers/build-on-gpu.sh: stage CUDASW++ 4.0's sources (commit 37a394c) and its build script in .peers/ and carry .peers"; return 1; }
    bash .peers/build-on-gpu.sh || { echo "CUDASW++ build failed"; return 1; }
  fi
  t1=$(date +%s.%N); echo "  build: $(elapsed "$t0" "$t1") s"

  echo "== data: the paper-shaped database and the 7 queries (kept in $W)"
  if [ ! -s "$W/db.fa" ] || [ ! -s "$W/q.fa" ]; then
    "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" || return 1
  fi
  awk -v w="$W" '/^>/{f=w "/q-" substr($1, 2) ".fa"} {print > f}' "$W/q.fa"
  for n in $LENS; do [ -s "$W/q-q$n.fa" ] || { echo "no query q$n in $W/q.fa"; return 1; }; done
  cat "$W/db.fa" "$W/q.fa" > /dev/null   # in the page cache, for both tools' makedb
  ls -l "$W/db.fa" "$W/q.fa"

  echo "== one-time preparation: chariot-align makedb, CUDASW++ makedb"
  t0=$(date +%s.%N)
  "$B/chariot-align" makedb -d "$W/db.fa" -o "$W/db.cadb" --no-progress > "$L/chariot-makedb.log" 2>&1 && rc=0 || rc=$?
  t1=$(date +%s.%N)
  row 0 chariot-align makedb - "" "$(elapsed "$t0" "$t1")"
  echo "  chariot-align makedb exit $rc: $(elapsed "$t0" "$t1") s; $(tail -1 "$L/chariot-makedb.log")"
  rm -rf "$W/cs4db" && mkdir -p "$W/cs4db"
  t0=$(date +%s.%N)
  "$CS4/makedb" "$W/db.fa" "$W/cs4db/db" > "$L/cudasw4-makedb.log" 2>&1 && rc=0 || rc=$?
  t1=$(date +%s.%N)
  row 0 cudasw4 makedb - "" "$(elapsed "$t0" "$t1")"
  echo "  CUDASW++ makedb exit $rc: $(elapsed "$t0" "$t1") s; $(du -sh "$W/cs4db" | cut -f1) on disk"
  [ $rc = 0 ] || { tail -20 "$L/cudasw4-makedb.log"; return 1; }

  for r in $(seq 1 "$ROUNDS"); do
    echo "== round $r of $ROUNDS (CUDASW++ first in even rounds)"
    for n in $LENS all7; do
      local f="$W/q-q$n.fa" q="q$n"
      [ "$n" = all7 ] && { f="$W/q.fa"; q=all7; }
      if [ $((r % 2)) = 1 ]; then
        run_chariot "$r" default "$q" "$f"; run_cudasw "$r" "$q" "$f"
        [ "$STREAMED" = 1 ] && run_chariot "$r" streamed "$q" "$f" --db-on-gpu no
      else
        [ "$STREAMED" = 1 ] && run_chariot "$r" streamed "$q" "$f" --db-on-gpu no
        run_cudasw "$r" "$q" "$f"; run_chariot "$r" default "$q" "$f"
      fi
    done
    [ "$STREAMED" = 1 ] && run_chariot "$r" portable all7 "$W/q.fa" --kernel portable
  done
  echo "== summary"
  summary "$CSV" "$L"
  echo "CSV: $CSV"
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/align-vs-cudasw.log"
