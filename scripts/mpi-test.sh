#!/usr/bin/env bash
# The cluster form's test (crates/chariot/tests/mpi.rs, issue 19): builds it with the
# `mpi` feature and runs it as 3 ranks on the sim backend, oversubscribed (CI has 2
# cores), then chariot-align search as 3 ranks against one process. Usage:
# bash scripts/mpi-test.sh   (after scripts/install-mpi.sh)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bin=$(cargo test -p chariot --features mpi --test mpi --no-run --message-format=json | python3 -c '
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
