#!/usr/bin/env bash
# Every score chariot-align prints, checked against an independent reference on the GPU
# machine: gotoh_check (crates/chariot-align/examples/gotoh_check.rs), a plain scalar
# Smith-Waterman/Gotoh kernel (32-bit, one thread per subject, the matrix itself), on
# CUDASW++'s peak set-up and the paper-shaped database.
#
# Parts (PARTS, default "peak paper"):
#  peak   for each L of PEAK_LENS: PEAK_SEQS sequences of exactly L residues (`generate
#         --sigma 0 --min L --max L`); searched with CUDASW++'s 20 queries ($Q20, 144 ...
#         5,478 residues, 41,752 in all) where L is in ALLQ_LENS, else with QSUB (default:
#         the shortest, the middle and the longest of the 20: 144, 1,500 and 5,478).
#  paper  the paper-shaped database (536,000 sequences, 404.9 M residues), the 20 queries.
# Each database: `chariot-align generate`, `makedb` (the prepared database, which the
# benchmarks time), `search -q QSET -d X.cadb -o X.tsv` (every pair's score), then
# `gotoh_check -q QSET -d X.fa --scores X.tsv` (the reference reads the FASTA); its files
# are removed before the next database (the 2,048-residue one takes 2.1 GB as FASTA and
# as much prepared). Each step's time and exit status are printed; a failed step ends
# that database's steps, not the script.
#
# Cost (the reference's cells: query residues x database residues): 5.3 T (128, the 20
# queries), 10.7 T (256, the 20), 3.6 / 5.5 / 7.3 / 14.6 T (512 / 768 / 1,024 / 2,048,
# QSUB), 16.9 T (paper, the 20): 64 T in all, e.g. 213 s at 300 GCUPS. gotoh_check prints
# its GCUPS (the kernels' time) per database: size PEAK_LENS, ALLQ_LENS and PARTS from it,
# or set BUDGET_S.
#
# Writes under $OUT: gotoh-check.log (this output, with a table at the end: per database
# the pairs checked, mismatches, missing and extra pairs, the reference's GCUPS and times),
# gotoh-check.csv (the table's rows), logs/ (every step's stdout and stderr; gotoh_check's
# stdout lists the first mismatches).
#
#   OUT=$OUT bash scripts/gpu/align-gotoh-check.sh
#
# Knobs: PARTS, PEAK_LENS ("128 256 512 768 1024 2048"), PEAK_SEQS (1000000), ALLQ_LENS
# ("128 256"), QSUB (a FASTA of queries for the other pseudo databases; default: picked
# from $Q20 as above), ROWS (gotoh_check --rows, query rows per strip: 8), CPU_SAMPLE
# (gotoh_check --cpu-sample: 48), BUDGET_S (0: none; else no database is started after
# this many seconds), BACKEND (cuda: search and gotoh_check --backend; auto would fall
# back to the simulator, hours of CPU, where CUDA does not load), GPUS (0), B (.gpu:
# $B/chariot-align and $B/gotoh_check), W (/tmp/align-gotoh-check), Q20
# ($B/allqueries.fasta), TIMEOUT per step (600 s).
set -euo pipefail
B=${B:-.gpu}; W=${W:-/tmp/align-gotoh-check}; TIMEOUT=${TIMEOUT:-600}; GPUS=${GPUS:-0}
PARTS=${PARTS:-"peak paper"}; PEAK_LENS=${PEAK_LENS:-"128 256 512 768 1024 2048"}; PEAK_SEQS=${PEAK_SEQS:-1000000}
ALLQ_LENS=${ALLQ_LENS:-"128 256"}; QSUB=${QSUB:-}; ROWS=${ROWS:-8}; CPU_SAMPLE=${CPU_SAMPLE:-48}
BUDGET_S=${BUDGET_S:-0}; Q20=${Q20:-$B/allqueries.fasta}; BACKEND=${BACKEND:-cuda}
: "${OUT:?set OUT to a directory}"
CSV=$OUT/gotoh-check.csv; L=$OUT/logs
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=$GPUS
T_START=$(date +%s.%N)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
# gotoh_check's summary line: "gotoh_check OK: pairs N, mismatches M, missing X, extra Y,
# cells C, reference G GCUPS (kernels K s, upload U s, ...), ..., total T s"
field() { grep -m1 -E '^gotoh_check ' "$2" 2>/dev/null | grep -oE "$1 [0-9.]+" | head -1 | awk '{print $NF}' || true; }
ref_gcups() { grep -m1 -E '^gotoh_check ' "$1" 2>/dev/null | grep -oE '[0-9.]+ GCUPS' | awk '{print $1}' || true; }
verdict() { grep -m1 -oE '^gotoh_check [A-Z ]+' "$1" 2>/dev/null | sed 's/^gotoh_check //' || true; }
# chariot-align search: "backend cuda (...), D = 1, S = 16, order lf, 48 slots: 1.770 s, 2064.3 GCUPS"
search_gcups() { grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$1" 2>/dev/null | awk '{print $3}' || true; }

# step NAME LOG CMD...: runs CMD (stdout and stderr to LOG, a timeout of TIMEOUT), prints
# its time and exit status; STEP_RC and STEP_S hold them after.
step() {
  local name=$1 log=$2 t0; shift 2
  t0=$(now)
  timeout "$TIMEOUT" "$@" > "$log" 2>&1 && STEP_RC=0 || STEP_RC=$?
  STEP_S=$(elapsed "$t0" "$(now)")
  printf '  %-12s exit %3s  %7s s  (%s)\n' "$name" "$STEP_RC" "$STEP_S" "$(basename "$log")"
}

# check_db NAME QUERIES GENERATE-ARGS...: generate, makedb, search, gotoh_check; a CSV row.
check_db() {
  local db=$1 qs=$2 fa=$W/$1.fa cadb=$W/$1.cadb tsv=$W/$1.tsv; shift 2
  local gen_s="" mk_s="" se_s="" ck_s="" rc_gen="" rc_mk="" rc_se="" rc_ck="" out=$L/gotoh-$db.out
  if [ "$BUDGET_S" != 0 ] && awk -v e="$(elapsed "$T_START" "$(now)")" -v b="$BUDGET_S" 'BEGIN{exit !(e > b)}'; then
    echo "== $db: skipped (BUDGET_S = $BUDGET_S s spent)"
    echo "$db,$(basename "$qs")$(printf ',%.0s' $(seq 16)),skipped" >> "$CSV"
    return 0
  fi
  echo "== $db: queries $(basename "$qs") ($(grep -c '^>' "$qs") of them, $(residues "$qs") residues)"
  rm -f "$fa" "$cadb" "$tsv" "$out"
  step generate "$L/generate-$db.log" "$B/chariot-align" generate "$@" --out "$fa" --quiet; rc_gen=$STEP_RC; gen_s=$STEP_S
  if [ "$rc_gen" = 0 ]; then
    step makedb "$L/makedb-$db.log" "$B/chariot-align" makedb -d "$fa" -o "$cadb" --no-progress; rc_mk=$STEP_RC; mk_s=$STEP_S
  fi
  if [ "$rc_mk" = 0 ]; then
    # The hits (top 10 per query) on stdout, the statistics (GCUPS) on stderr: both in the log.
    step search "$L/search-$db.log" "$B/chariot-align" search -q "$qs" -d "$cadb" -o "$tsv" --no-progress \
      --backend "$BACKEND"
    rc_se=$STEP_RC; se_s=$STEP_S
    rm -f "$cadb"
    [ "$rc_se" = 0 ] && echo "               $(wc -l < "$tsv") TSV lines, search $(search_gcups "$L/search-$db.log") GCUPS"
  fi
  if [ "$rc_se" = 0 ]; then
    local t0; t0=$(now)
    timeout "$TIMEOUT" "$B/gotoh_check" -q "$qs" -d "$fa" --scores "$tsv" --rows "$ROWS" --cpu-sample "$CPU_SAMPLE" \
      --backend "$BACKEND" \
      > "$out" 2> "$L/gotoh-$db.log" && rc_ck=0 || rc_ck=$?
    ck_s=$(elapsed "$t0" "$(now)")
    printf '  %-12s exit %3s  %7s s  (%s)\n' gotoh_check "$rc_ck" "$ck_s" "$(basename "$out")"
    head -c 4000 "$out" | sed 's/^/    /'
    [ "$rc_ck" = 2 ] && tail -3 "$L/gotoh-$db.log" | sed 's/^/    /'
  fi
  rm -f "$fa" "$tsv"
  echo "$db,$(basename "$qs"),$(field pairs "$out"),$(field mismatches "$out"),$(field missing "$out"),$(field extra "$out"),$(field cells "$out"),$(ref_gcups "$out"),$(field kernels "$out"),$ck_s,$(search_gcups "$L/search-$db.log"),$se_s,$gen_s,$mk_s,$rc_gen,$rc_mk,$rc_se,$rc_ck,$(verdict "$out")" >> "$CSV"
}

residues() { grep -v '^>' "$1" | tr -d ' \r\n' | wc -c; }

# qsub OUT: the shortest, the middle (in length order) and the longest query of $Q20.
qsub() {
  python3 - "$Q20" "$1" <<'PY'
import sys
recs = []
for line in open(sys.argv[1]):
    if line.startswith(">"): recs.append([line, []])
    elif recs: recs[-1][1].append(line)
n = lambda r: sum(len(l.strip()) for l in r[1])
by_len = sorted(recs, key=n)
pick = [by_len[0], by_len[len(by_len) // 2], by_len[-1]]
with open(sys.argv[2], "w") as f:
    for r in pick: f.write(r[0] + "".join(r[1]))
print("QSUB: " + ", ".join(f"{r[0].split()[0][1:]} ({n(r)})" for r in pick))
PY
}

summary() {
  python3 - "$CSV" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"  {'db':<12}{'queries':<16}{'verdict':<10}{'pairs':>10}{'mismatch':>9}{'missing':>8}{'extra':>6}"
      f"{'cells':>10}{'ref GCUPS':>10}{'kernels s':>10}{'check s':>8}{'search s':>9}{'gen s':>7}{'makedb s':>9}  exits")
for r in rows:
    cells = f"{int(r['cells']) / 1e12:.2f} T" if r["cells"] else ""
    print(f"  {r['db']:<12}{r['queries']:<16}{r['verdict'] or '-':<10}{r['pairs']:>10}{r['mismatches']:>9}"
          f"{r['missing']:>8}{r['extra']:>6}{cells:>10}{r['ref_gcups']:>10}{r['ref_kernels_s']:>10}{r['check_s']:>8}"
          f"{r['search_s']:>9}{r['generate_s']:>7}{r['makedb_s']:>9}  "
          f"{r['rc_generate']}/{r['rc_makedb']}/{r['rc_search']}/{r['rc_check']}")
bad = [r["db"] for r in rows if r["verdict"] != "OK"]
print("every score equals the reference" if not bad else "NOT checked or NOT equal: " + " ".join(bad))
PY
}

main() {
  mkdir -p "$OUT" "$L" "$W"
  { date -u; nvidia-smi -L || true; echo "CUDA_VISIBLE_DEVICES=$GPUS"; echo "cpus: $(nproc)"; df -h "$W" | tail -1; } 2>&1
  local f len qs
  for f in "$B/chariot-align" "$B/gotoh_check"; do [ -x "$f" ] || { echo "no $f"; return 1; }; done
  [ -s "$Q20" ] || { echo "no $Q20 (CUDASW++'s 20 queries)"; return 1; }
  echo "db,queries,pairs,mismatches,missing,extra,cells,ref_gcups,ref_kernels_s,check_s,search_gcups,search_s,generate_s,makedb_s,rc_generate,rc_makedb,rc_search,rc_check,verdict" > "$CSV"
  cp "$Q20" "$W/all20.fa"
  if [ -n "$QSUB" ]; then
    [ -s "$QSUB" ] || { echo "no $QSUB (QSUB)"; return 1; }
    cp "$QSUB" "$W/qsub.fa"
  else
    qsub "$W/qsub.fa"
  fi
  for part in $PARTS; do
    case $part in
      peak)
        for len in $PEAK_LENS; do
          qs=$W/qsub.fa
          case " $ALLQ_LENS " in *" $len "*) qs=$W/all20.fa ;; esac
          check_db "pseudo$len" "$qs" --sequences "$PEAK_SEQS" --mean "$len" --sigma 0 --min "$len" --max "$len"
        done ;;
      paper) check_db paper "$W/all20.fa" --sequences 536000 ;;
      *) echo "PARTS: unknown part $part (allowed: peak, paper)"; return 1 ;;
    esac
  done
  echo "== summary ($(elapsed "$T_START" "$(now)") s in all)"
  summary
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/gotoh-check.log"
