#!/usr/bin/env bash
# Call D (nvidia-h200-x2): where spreading a recorded part pays. Two builds of the
# final code differing only in SPREAD_WIDTH: flow-always (0: every connected part that
# is more than a chain is spread at D >= 2) and flow-never (infinite: none is). MUSTARD
# rnd 4096 at 10,000 spin iterations with 1, 4, 8, 16, 33 and 66 blocks a node: never
# at D = 1, never at D = 2 and always at D = 2, alternated, 3 calls each.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
W=/tmp/callD; rm -rf "$W"; mkdir -p "$W"
for i in 1 2 3; do
  for b in 1 4 8 16 33 66; do
    for v in never-d1 never-d2 always-d2; do
      bin=.gpu/flow-${v%-d*}; d=${v#*-d}
      timeout 60 $bin --gpus $d --blocks $b --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
        --csv "$W/rnd4096-b$b-$v-$i.csv" > "$W/rnd4096-b$b-$v-$i.log" 2>&1 || echo "rnd b$b $v $i exit $?"
    done
  done
  echo "pass $i done after $(( $(date +%s) - t0 )) s"
done
tar czf "$OUT/csv.tgz" -C "$W" $(cd $W && ls) || true
