#!/usr/bin/env bash
# The running best as a half-float max (hb) against the integer max (pf): which pipe the
# half max takes, hb's GPU score test, then both on 256-residue subjects and the paper-shaped database.
set -uo pipefail
O=/tmp/o; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=0
(cd .gpu && nvcc -O3 -arch=sm_90 -o ubench2 ubench2.cu && ./ubench2 && cuobjdump -sass ubench2 | grep -oE "VHMNMX[.A-Z0-9]*|HMNMX2[.A-Z0-9]*|VIMNMX3[.A-Z0-9]*|VIADD\.16x2|VIMNMX\.[.A-Z0-9]*" | sort | uniq -c) > $O/ubench2.txt 2>&1
cat $O/ubench2.txt
(cd .gpu && timeout 200 ./test-chariot-align-end_to_end --ignored --test-threads=1) > $O/gpu-test.log 2>&1
echo "GPU tests exit $?: $(grep -E '^test result' $O/gpu-test.log | tail -1)"
OUT=$O/peak B=.gpu CS4=.gpu/cs4bin W=/tmp/w VARIANTS="pf hb" PARTS="paper20 peak" PEAK_LENS=256 CS4_KERNELS=dpx ROUNDS=2 timeout 200 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' $O/peak/peak.log | grep -v "^    gi\|^    tr"
.gpu/chariot-align-hb generate --sequences 2 --mean 63 --sigma 0 --min 63 --max 63 --out /tmp/w/q63.fa --quiet
awk '/^>/{p=($0 ~ /FAT_DROME/)} p' .gpu/allqueries.fasta > /tmp/w/q5147.fa
for r in 1 2 3; do for q in q63 q5147; do for v in pf hb; do
  .gpu/chariot-align-$v search -q /tmp/w/$q.fa -d /tmp/w/paper.cadb --no-progress --top 1 > $O/short-$v-$q-$r.hits 2> $O/short-$v-$q-$r.log
  echo "round $r $q $v: $(grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' $O/short-$v-$q-$r.log)"
done; done; done
tar czf $OUT/m6.tgz -C /tmp o
