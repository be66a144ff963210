#!/usr/bin/env bash
# The balanced 48 x 16 MiB loop from Python against CuPy's stream pipeline, a new wheel
# against the previous one: per pass, bench/loop48.py (every way in each of its
# rounds, order rotated) and bench/sync_cost.py with each wheel, the wheels' order
# swapped pass by pass; then the new wheel's GPU tests and, where .gpu/images is
# staged, GrCUDA's image DAG stream from Python beside chariot's Rust image bench.
#
# Here, before the device call: the new wheel in .gpu/wheels/ (with pytest's wheels,
# see python-gpu.sh), the previous one in .gpu/wheels-old/, the Rust demo in
# .gpu/chariot-demo (it calibrates the kernel); pack .gpu and carry it. PASSES (3) and
# ROUNDS (21) set the campaign's length: about a minute a pass. Every file also in
# $OUT.tgz.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
# $py, $new, $old and $OUT/machine.txt (see that script)
source scripts/gpu/python-wheels.sh
rc=0
for pass in $(seq 1 "${PASSES:-3}"); do
  order="new old"; [ $((pass % 2)) = 0 ] && order="old new"
  for w in $order; do
    site=$new; [ "$w" = old ] && site=$old
    mkdir -p "$OUT/loop48-$w-$pass"
    PYTHONPATH=$site timeout 200 "$py" crates/chariot-py/bench/loop48.py --out "$OUT/loop48-$w-$pass" \
      --rounds "${ROUNDS:-21}" --tasks 5000 --demo .gpu/chariot-demo > "$OUT/loop48-$w-$pass/loop48.log" 2>&1 || rc=1
    PYTHONPATH=$site timeout 60 "$py" crates/chariot-py/bench/sync_cost.py --runs 9 --csv "$OUT/sync-$w-$pass.csv" \
      > "$OUT/sync-$w-$pass.log" 2>&1 || rc=1
  done
done
PYTHONPATH=$new timeout 150 "$py" -m pytest -m gpu -v -p no:cacheprovider crates/chariot-py/tests > "$OUT/pytest-gpu.log" 2>&1 && r=0 || r=$?
echo "exit $r" >> "$OUT/pytest-gpu.log"; [ $r = 0 ] || rc=$r
if [ -x .gpu/images ]; then
  PYTHONPATH=$new timeout 240 "$py" crates/chariot-py/bench/images.py --rust .gpu/images --out "$OUT" > "$OUT/images.log" 2>&1 && r=0 || r=$?
  echo "exit $r" >> "$OUT/images.log"; [ $r = 0 ] || rc=$r
fi
{ tail -3 "$OUT/pytest-gpu.log"
  [ -f "$OUT/images.log" ] && tail -12 "$OUT/images.log"
  for f in "$OUT"/sync-*.log; do echo "$(basename "$f"): $(tail -1 "$f")"; done
  for f in "$OUT"/loop48-*/loop48.log; do echo "$(basename "$(dirname "$f")"):"; grep -E "speedup|makespans" "$f" || true; done
} | tee "$OUT/summary.txt"
# Every file in one archive: a device call brings back a handful of files.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
exit "$rc"
