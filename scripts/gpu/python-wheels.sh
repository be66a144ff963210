#!/usr/bin/env bash
# Sourced by python-sync.sh and python-loop.sh (from the repository root, with OUT set):
# installs the new wheel (.gpu/wheels/) and the previous one (.gpu/wheels-old/) into
# fresh folders, each with pytest, as $new and $old for PYTHONPATH, and writes the
# machine's GPU, CPU count, Python and CuPy versions to $OUT/machine.txt. $py is the
# Python they run ($PYTHON, else python3).
set -euo pipefail
py=${PYTHON:-$(command -v python3)}
install() { # the wheel in $1 into a fresh folder; prints the folder
  local site; site=$(mktemp -d)/site
  "$py" -m pip install --no-index --no-deps --quiet --target "$site" "$1"/gpu_chariot-*.whl
  "$py" -c 'import pytest' 2>/dev/null || "$py" -m pip install --no-index --quiet --target "$site" --find-links "$1" pytest
  echo "$site"
}
new=$(install .gpu/wheels); old=$(install .gpu/wheels-old)
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; "$py" --version
  "$py" -c 'import cupy; print("cupy", cupy.__version__)'; } > "$OUT/machine.txt" 2>&1
