#!/usr/bin/env bash
# The per-iteration loop's windows spread over both GPUs where a part keeps one busy:
# the new build's GPU tests with both GPUs visible; MUSTARD rnd 4096 at 10,000 spin
# iterations with 16, 33 and 264 blocks a node at D = 1 and 2, the build before
# (0192174, `old`) and this one (`new`) alternated, 3 passes; the default flow shapes
# at D = 2, chariot's defaults, old and new alternated, 2 processes each.
set -euo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1 || true
t0=$(date +%s)
for t in gpu recorded replay resident; do
  timeout 150 .gpu/test-$t --include-ignored --test-threads=1 > "$OUT/test-$t.log" 2>&1 && rc=0 || rc=$?
  echo "test-$t exit $rc after $(( $(date +%s) - t0 )) s: $(grep 'test result' "$OUT/test-$t.log" | tail -1)"
done
W=$OUT/rnd; mkdir -p "$W"
for i in 1 2 3; do
  for b in 16 33 264; do
    for d in 1 2; do
      for l in old new; do
        [ $(( (i + b) % 2 )) -eq 0 ] && { [ $l = old ] && l=new || l=old; }
        f=.gpu/flow; [ $l = old ] && f=.gpu/old/flow
        timeout 90 $f --gpus $d --blocks $b --shapes rnd --size rnd=4096 --iters 10000 --rounds 5 \
          --csv "$W/rnd4096-b$b-$l-d$d-$i.csv" > "$W/rnd4096-b$b-$l-d$d-$i.log" 2>&1 && rc=0 || rc=$?
        [ $rc -eq 0 ] || echo "rnd b$b $l d$d $i exit $rc"
      done
    done
  done
  echo "pass $i done after $(( $(date +%s) - t0 )) s"
done
python3 scripts/gpu/flow-rnd-scaling.py "$W" > "$OUT/rnd-scaling.txt" 2>&1 || true
F=$OUT/flow-d2; mkdir -p "$F"
for p in 1 2; do
  for l in old new; do
    [ $p -eq 2 ] && { [ $l = old ] && l=new || l=old; }
    f=.gpu/flow; [ $l = old ] && f=.gpu/old/flow
    timeout 100 $f --gpus 2 --variants chariot,graph --rounds 9 --csv "$F/flow-$l-$p.csv" > "$F/flow-$l-$p.log" 2>&1 && rc=0 || rc=$?
    echo "flow d2 $l $p exit $rc after $(( $(date +%s) - t0 )) s"
  done
done
python3 scripts/gpu/flow-summary.py "$F" old new > "$OUT/flow-d2-old-new.txt" 2>&1 || true
(cd "$OUT" && tar cJf logs.tar.xz rnd flow-d2 && rm -rf rnd flow-d2) || true
