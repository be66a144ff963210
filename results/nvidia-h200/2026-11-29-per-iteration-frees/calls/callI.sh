#!/usr/bin/env bash
# Call I (diagnosis, not landed): where the end of a per-iteration batch goes, timed
# inside synchronize by an instrumented build.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
for s in lc dag rnd; do
  CHARIOT_PROBE=1 timeout 90 .gpu/flow-probe --shapes $s --iters 0,10000 --rounds 3 --no-recorded > "$OUT/probe-$s.log" 2>&1
  grep "probe windows [1-9]" "$OUT/probe-$s.log" | tail -8
done
