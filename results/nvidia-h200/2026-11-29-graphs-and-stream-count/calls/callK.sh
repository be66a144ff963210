#!/usr/bin/env bash
# Call K: chariot's own streams and its recorded chain (sprobe: a process per S and mode).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT
for rep in 1 2; do
  for s in 8 15 16 17 32; do for m in none host auto; do .gpu/sprobe $s $m; done; done
done > $OUT/sprobe.txt 2>&1
