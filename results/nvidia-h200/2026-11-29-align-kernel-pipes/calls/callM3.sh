#!/usr/bin/env bash
# The kernel with its adds on the FMA pipe (pp, pp3) against the committed one (cur).
set -uo pipefail
O=/tmp/o; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $O/machine.txt 2>&1
(cd .gpu && timeout 120 ./test-chariot-align-end_to_end --ignored --exact dpx_and_portable_kernels_match_gotoh_on_gpu --test-threads=1) > $O/gpu-test.log 2>&1
echo "GPU test exit $?: $(grep -E '^test result' $O/gpu-test.log | tail -1)"
OUT=$O/peak B=.gpu CS4=.gpu/cs4bin W=/tmp/w VARIANTS="cur pp" PARTS="peak paper20" PEAK_LENS=256 CS4_KERNELS=dpx timeout 300 bash .gpu/align-peak.sh > /dev/null 2>&1
sed -n '/== medians/,$p' $O/peak/peak.log
awk '/^>/{p=($0 ~ /ANT3_HUMAN/)} p' .gpu/allqueries.fasta > /tmp/w/q464.fa
.gpu/chariot-align-pp generate --sequences 200000 --mean 256 --sigma 0 --min 256 --max 256 --out /tmp/w/p.fa --quiet
.gpu/chariot-align-pp makedb -d /tmp/w/p.fa -o /tmp/w/p.cadb --no-progress > /dev/null 2>&1
for v in pp; do
timeout 100 ncu --kernel-name sw_search_dpx --launch-skip 2 --launch-count 1 --section ComputeWorkloadAnalysis --section SourceCounters --page source --print-source sass --csv \
  .gpu/chariot-align-$v search -q /tmp/w/q464.fa -d /tmp/w/p.cadb --no-progress --top 1 --chunk 65536 > $O/src-$v.csv 2>&1; echo "src $v rc $?"
timeout 100 ncu --kernel-name sw_search_dpx --launch-skip 2 --launch-count 1 --section ComputeWorkloadAnalysis --section SpeedOfLight --section Occupancy \
  .gpu/chariot-align-$v search -q /tmp/w/q464.fa -d /tmp/w/p.cadb --no-progress --top 1 --chunk 65536 > $O/ncu-$v.txt 2>&1; echo "ncu $v rc $?"
grep -E "Duration|Pipe Alu Cycles|Pipe Fmaheavy Cycles|Issue Active|Registers Per" $O/ncu-$v.txt
done
.gpu/chariot-align-pp generate --sequences 2 --mean 63 --sigma 0 --min 63 --max 63 --out /tmp/w/q63.fa --quiet
.gpu/chariot-align-pp generate --sequences 2 --mean 127 --sigma 0 --min 127 --max 127 --out /tmp/w/q127.fa --quiet
for r in 1 2 3; do for q in q63 q127; do for v in cur pp; do
  .gpu/chariot-align-$v search -q /tmp/w/$q.fa -d /tmp/w/paper.cadb --no-progress --top 1 > $O/short-$v-$q-$r.hits 2> $O/short-$v-$q-$r.log
  echo "round $r $q $v: $(grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' $O/short-$v-$q-$r.log)"
done; done; done
tar czf $OUT/m3.tgz -C /tmp o
