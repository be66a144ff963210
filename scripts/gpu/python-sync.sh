#!/usr/bin/env bash
# The Python package against its previous wheel on a GPU: the GPU tests, GrCUDA's
# image DAG stream from Python beside chariot's Rust image bench
# (crates/chariot-py/bench/images.py --rust .gpu/images), then bench/sync_cost.py and
# bench/loop48.py with the new and the old wheel alternated (new, old, new, old).
#
# Here, before the device call: `bash scripts/gpu/stage.sh`, then the new wheel in
# .gpu/wheels/ and the old one in .gpu/wheels-old/ (each `maturin build --release -m
# crates/chariot-py/Cargo.toml`), with pytest's wheels beside the new one (see
# python-gpu.sh); pack .gpu and carry it. About 6 minutes; every file also in $OUT.tgz.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
# $py, $new, $old and $OUT/machine.txt (see that script)
source scripts/gpu/python-wheels.sh
rc=0
PYTHONPATH=$new timeout 150 "$py" -m pytest -m gpu -v -p no:cacheprovider crates/chariot-py/tests > "$OUT/pytest-gpu.log" 2>&1 && r=0 || r=$?
echo "exit $r" >> "$OUT/pytest-gpu.log"; [ $r = 0 ] || rc=$r
PYTHONPATH=$new timeout 240 "$py" crates/chariot-py/bench/images.py --rust .gpu/images --out "$OUT" > "$OUT/images.log" 2>&1 && r=0 || r=$?
echo "exit $r" >> "$OUT/images.log"; [ $r = 0 ] || rc=$r
for pass in 1 2; do
  for w in new old; do
    site=$new; [ "$w" = old ] && site=$old
    PYTHONPATH=$site timeout 60 "$py" crates/chariot-py/bench/sync_cost.py --csv "$OUT/sync-$w-$pass.csv" \
      > "$OUT/sync-$w-$pass.log" 2>&1 || rc=1
    mkdir -p "$OUT/loop48-$w-$pass"
    PYTHONPATH=$site timeout 120 "$py" crates/chariot-py/bench/loop48.py --out "$OUT/loop48-$w-$pass" \
      --demo .gpu/chariot-demo > "$OUT/loop48-$w-$pass/loop48.log" 2>&1 || rc=1
  done
done
{ tail -3 "$OUT/pytest-gpu.log"; tail -12 "$OUT/images.log"
  for f in "$OUT"/sync-*.log; do echo "$(basename "$f"): $(tail -1 "$f")"; done
  for f in "$OUT"/loop48-*/loop48.log; do echo "$(basename "$(dirname "$f")"):"; grep -E "speedup|makespans" "$f" || true; done
} | tee "$OUT/summary.txt"
# Every file in one archive: a device call brings back a handful of files.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
exit "$rc"
