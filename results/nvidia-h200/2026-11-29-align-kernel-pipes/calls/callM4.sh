#!/usr/bin/env bash
# Kernel variants: cur (committed), pp (FMA-pipe adds, no branch, H arrays in turn, pad row), pf (pp + loads a step ahead).
set -uo pipefail
O=/tmp/o; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=0
OUT=$O/peak B=.gpu CS4=.gpu/cs4bin W=/tmp/w VARIANTS="cur pp pf" PARTS="paper20 peak" PEAK_LENS=256 CS4_KERNELS=dpx ROUNDS=2 timeout 300 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' $O/peak/peak.log | grep -v "^    gi\|^    tr"
.gpu/chariot-align-pf generate --sequences 2 --mean 63 --sigma 0 --min 63 --max 63 --out /tmp/w/q63.fa --quiet
.gpu/chariot-align-pf generate --sequences 2 --mean 127 --sigma 0 --min 127 --max 127 --out /tmp/w/q127.fa --quiet
awk '/^>/{p=($0 ~ /FAT_DROME/)} p' .gpu/allqueries.fasta > /tmp/w/q5147.fa
for r in 1 2 3; do for q in q63 q127 q5147; do for v in cur pp pf; do
  .gpu/chariot-align-$v search -q /tmp/w/$q.fa -d /tmp/w/paper.cadb --no-progress --top 1 > $O/short-$v-$q-$r.hits 2> $O/short-$v-$q-$r.log
  echo "round $r $q $v: $(grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' $O/short-$v-$q-$r.log)"
done; done; done
tar czf $OUT/m4.tgz -C /tmp o
