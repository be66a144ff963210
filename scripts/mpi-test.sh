#!/usr/bin/env bash
# The cluster form's test (crates/chariot/tests/mpi.rs, issue 19): builds it with the
# `mpi` feature and runs it as 3 ranks on the sim backend, oversubscribed (CI has 2
# cores). Usage: bash scripts/mpi-test.sh   (after scripts/install-mpi.sh)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bin=$(cargo test -p chariot --features mpi --test mpi --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "mpi":
        print(m["executable"])')
[ -n "$bin" ] || { echo "mpi-test: the test binary was not built" >&2; exit 1; }
# Open MPI refuses root without these; CI may run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 mpirun --oversubscribe -np 3 "$bin"
