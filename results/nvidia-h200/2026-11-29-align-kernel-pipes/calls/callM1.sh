#!/usr/bin/env bash
# Diagnosis: instruction throughputs, chunk sizes, and Nsight Compute on both tools' kernels.
set -uo pipefail
O=/tmp/o; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=0
cd .gpu
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader; ncu --version; } > $O/machine.txt 2>&1
nvcc -O3 -arch=sm_90 -o ubench ubench.cu > $O/ubench-build.txt 2>&1 && ./ubench > $O/ubench.txt 2>&1
cuobjdump -sass ubench | grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[A-Z0-9_.]+' | awk '{print $2}' | sort | uniq -c | sort -rn | head -30 > $O/ubench-sass.txt 2>&1
cat $O/ubench.txt
W=/tmp/w; mkdir -p $W
t0=$(date +%s)
./chariot-align generate --sequences 1000000 --mean 256 --sigma 0 --min 256 --max 256 --out $W/p256.fa --quiet
./chariot-align makedb -d $W/p256.fa -o $W/p256.cadb --no-progress > $O/makedb.log 2>&1
echo "db in $(( $(date +%s) - t0 )) s"
cp allqueries.fasta $W/all20.fa
awk '/^>/{p=($0 ~ /ANT3_HUMAN/)} p' allqueries.fasta > $W/q464.fa
awk '/^>/{p=($0 ~ /FAT_DROME/)} p' allqueries.fasta > $W/q5147.fa
# chunk sizes and CUDASW++, alternated, 3 rounds
for r in 1 2 3; do
  for c in 8192 32768 131072; do
    s=$(date +%s.%N); ./chariot-align search -q $W/all20.fa -d $W/p256.cadb --no-progress --top 1 --chunk $c > /dev/null 2> $O/ch-$c-$r.log
    e=$(date +%s.%N); echo "round $r chunk $c: $(grep -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' $O/ch-$c-$r.log) wall $(awk -v a=$s -v b=$e "BEGIN{printf \"%.2f\", b-a}")"
  done
  s=$(date +%s.%N); cs4bin/align --query $W/all20.fa --pseudodb 1000000 256 --top 1 --uploadFull --mat blosum62 --dpx --verbose > $O/cs4-$r.log 2>&1
  e=$(date +%s.%N); echo "round $r cudasw4 dpx: $(grep -oE 'Total time: [0-9.eE+-]+ s, [0-9.eE+-]+ GCUPS' $O/cs4-$r.log | tail -1) wall $(awk -v a=$s -v b=$e "BEGIN{printf \"%.2f\", b-a}")"
done
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
for q in q464 q5147; do
timeout 150 ncu --kernel-name sw_search_dpx --launch-skip 2 --launch-count 1 $SEC --print-details all \
  ./chariot-align search -q $W/$q.fa -d $W/p256.cadb --no-progress --top 1 --chunk 65536 > $O/ncu-chariot-$q.txt 2>&1
echo "ncu chariot $q rc $?"
timeout 150 ncu --kernel-name regex:dpx_s16 --launch-count 1 $SEC --print-details all \
  cs4bin/align --query $W/$q.fa --pseudodb 1000000 256 --top 1 --uploadFull --mat blosum62 --dpx > $O/ncu-cs4-$q.txt 2>&1
echo "ncu cs4 $q rc $?"
done
timeout 120 ncu --kernel-name sw_search_dpx --launch-skip 2 --launch-count 1 --section SourceCounters --page source --print-source sass --csv \
  ./chariot-align search -q $W/q464.fa -d $W/p256.cadb --no-progress --top 1 --chunk 65536 > $O/src-chariot.csv 2>&1; echo "src chariot rc $?"
timeout 120 ncu --kernel-name regex:dpx_s16 --launch-count 1 --section SourceCounters --page source --print-source sass --csv \
  cs4bin/align --query $W/q464.fa --pseudodb 1000000 256 --top 1 --uploadFull --mat blosum62 --dpx > $O/src-cs4.csv 2>&1; echo "src cs4 rc $?"
ls -la $O
tar czf $OUT/m1.tgz -C /tmp o
