#!/usr/bin/env bash
# The cluster form's test (tests/mpi.rs): builds it with the
# `mpi` feature and runs it as 3 ranks on the sim backend, oversubscribed (CI has 2
# cores), then chariot-align search as 3 ranks against one process. Usage:
# bash scripts/ci/mpi-test.sh   (after scripts/ci/install-mpi.sh)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bin=$(cargo test -p gpu-chariot --features mpi --test mpi --no-run --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "mpi":
        print(m["executable"])')
[ -n "$bin" ] || { echo "mpi-test: the test binary was not built" >&2; exit 1; }
# Open MPI refuses root without these; CI may run as root. Its shared-memory transport's
# single-copy mechanism needs ptrace rights containers often lack: copy through memory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
timeout 300 mpirun --oversubscribe -np 3 "$bin"

# chariot-align search as 3 ranks against one process, on the sim backend: the same
# best hits (rank 0 prints them) and, over the ranks' TSV files, the same scores.
A=$(cargo build -q -p chariot-align --features mpi --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "chariot-align":
        print(m["executable"])')
[ -n "$A" ] || { echo "mpi-test: chariot-align was not built" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
$A generate --sequences 3000 --mean 200 --max 1500 --out "$W/db.fa" --queries-out "$W/q.fa" --query-lengths 63,255 >/dev/null
one=(search -q "$W/q.fa" -d "$W/db.fa" --backend sim-instant --chunk 50 --no-progress --top 5)
$A "${one[@]}" -o "$W/one.tsv" > "$W/one.txt" 2>/dev/null
timeout 300 mpirun --oversubscribe -np 3 $A "${one[@]}" -o "$W/three.tsv" > "$W/three.txt" 2>/dev/null
diff <(grep -E '^ +[0-9]+ ' "$W/one.txt") <(grep -E '^ +[0-9]+ ' "$W/three.txt")
diff <(tail -n +2 "$W/one.tsv" | sort) <(cat "$W"/three.tsv "$W"/three.tsv.rank* | grep -v '^query' | sort)
for r in 0 1 2; do
  f="$W/three.tsv"; [ $r = 0 ] || f="$W/three.tsv.rank$r"
  [ "$(wc -l < "$f")" -gt 1 ] || { echo "mpi-test: rank $r searched nothing" >&2; exit 1; }
done
echo "chariot-align search: 3 ranks give one process's hits and scores"

# The overhead study (benches/overhead) as 3 ranks on the sim backend: chariot's
# defaults in the ranks' one task stream; rank 0 gathers every rank's outputs and checks
# them element by element (a wrong one fails the run), and writes the CSV and the trace.
# --iters: on 2 busy cores the sim's kernel probe cannot set r.
O=$(cargo bench --no-run -q --bench overhead --features mpi --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "overhead":
        print(m["executable"])')
[ -n "$O" ] || { echo "mpi-test: the overhead study was not built" >&2; exit 1; }
timeout 300 mpirun --oversubscribe -np 3 "$O" --backend sim --chunks 12 --min-mib 0.5 --max-mib 2 --ratios 1 \
  --sizes fixed,random --iters 64 --repeat 2 --trace --out "$W/overhead" > "$W/overhead.txt"
python3 - "$W/overhead" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/overhead.csv")))
assert len(rows) == 4, f"{len(rows)} rows, not 4"
for r in rows:
    split = [int(n) for n in r["tasks_per_gpu"].split("/")]
    assert r["gpus"] == "3" and len(split) == 3 and sum(split) == 12, r
trace = json.load(open(f"{d}/trace-fixed-0-r1-d3.json"))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
groups = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
assert all(any(g.startswith(f"GPU {i}: rank {i}:") for g in groups) for i in range(3)), groups
print(f"overhead study: 3 ranks, {len(rows)} runs checked, tasks per rank {[r['tasks_per_gpu'] for r in rows]}")
PY
