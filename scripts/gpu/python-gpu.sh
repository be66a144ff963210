#!/usr/bin/env bash
# The Python package on a GPU: installs the carried wheel into a folder on PYTHONPATH,
# beside the machine's NumPy, CuPy and PyTorch (no network there), runs the GPU
# tests (pytest -m gpu), then the balanced 48 x 16 MiB loop three ways (chariot from
# Python, the CuPy stream pipeline at its best stream count, the Rust demo) alternated,
# medians of 3, and the host cost per task of a Python loop; CSVs and logs to $OUT.
#
# Here, before the device call: `bash scripts/gpu/stage.sh` (the demo) and
#   maturin build --release -m crates/chariot-py/Cargo.toml && mkdir -p .gpu/wheels &&
#   cp target/wheels/gpu_chariot-*.whl .gpu/wheels/ &&
#   pip download --only-binary=:all: --platform any --python-version 3.9 --implementation py \
#     -d .gpu/wheels "pytest>=8,<9" exceptiongroup tomli typing_extensions
# (pytest and its dependencies as pure-Python wheels, for a machine that lacks it)
# then `OUT=$OUT bash scripts/gpu/python-gpu.sh` with carry [".gpu"]. About 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
wheel=$(ls -t ${WHEEL:-.gpu/wheels/gpu_chariot-*.whl} 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  echo "python-gpu: no wheel at ${WHEEL:-.gpu/wheels/gpu_chariot-*.whl}: build and stage it first (see the top comment)" >&2
  exit 2
fi
py=${PYTHON:-$(command -v python3)}
{ echo "wheel: $wheel"; "$py" --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  "$py" -c 'import numpy, sys; print("numpy", numpy.__version__)' || true
  "$py" -c 'import cupy; print("cupy", cupy.__version__)' || echo "cupy: missing"
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' || echo "torch: missing"
} 2>&1 | tee "$OUT/machine.txt"
# The wheel and pytest go to a folder of their own on PYTHONPATH, not a virtual
# environment: the machine's NumPy, CuPy and PyTorch may live in the user's site
# packages, which a virtual environment does not see.
site=$(mktemp -d)/site
"$py" -m pip install --no-index --no-deps --quiet --target "$site" "$wheel"
"$py" -c 'import pytest' 2>/dev/null ||
  "$py" -m pip install --no-index --quiet --target "$site" --find-links "$(dirname "$wheel")" pytest
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
rc=0
# The GPU tests, then the simulated suite on this machine too.
timeout 120 "$py" -m pytest -m gpu -v -p no:cacheprovider crates/chariot-py/tests 2>&1 | tee "$OUT/pytest-gpu.log" || rc=$?
echo "exit $rc" >> "$OUT/pytest-gpu.log"
timeout 60 "$py" -m pytest -m "not gpu" -q -p no:cacheprovider crates/chariot-py/tests > "$OUT/pytest-sim.log" 2>&1 && r=0 || r=$?
echo "exit $r" >> "$OUT/pytest-sim.log"
tail -2 "$OUT/pytest-sim.log"
# The loop and the host cost.
timeout 110 "$py" crates/chariot-py/bench/loop48.py --out "$OUT" --demo .gpu/chariot-demo 2>&1 | tee "$OUT/loop48.log" && r=0 || r=$?
echo "exit $r" >> "$OUT/loop48.log"
exit "$rc"
