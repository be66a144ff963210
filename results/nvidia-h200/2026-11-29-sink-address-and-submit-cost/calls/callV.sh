# Call V: windows on one GPU laid out by the dispatcher (new) against the submit trims
# (mid, 3f47c37) and the build before them (old, 2a11a6f): the GPU tests of new; the
# per-iteration loop's submit cost (prof, 200 batches a process, CUDA, Auto) and the
# flow bench's loop variant (each in its own process), the three builds in turn, four
# turns, the order rotating.
set -u
mkdir -p $OUT/csv
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > $OUT/machine.txt
for t in gpu replay recorded resident; do
  timeout 300 .gpu/test-$t --ignored --test-threads 1 > $OUT/test-$t.txt 2>&1; echo "test-$t exit $?" >> $OUT/machine.txt
done
builds=(old mid new)
for turn in 1 2 3 4; do
  for k in 0 1 2; do
    b=${builds[$(( (k + turn) % 3 ))]}
    for s in lc:1024 ep:1024 rnd:1024 dag:32 mr:64; do
      timeout 120 .gpu/prof-$b cuda ${s%%:*} ${s##*:} auto 200 0 2>/dev/null | sed "s/^/$b /"
    done
  done
done > $OUT/submit.txt 2>&1
for turn in 1 2 3 4; do
  for k in 0 1 2; do
    b=${builds[$(( (k + turn) % 3 ))]}
    timeout 300 .gpu/flow-$b --variants chariot --csv $OUT/csv/flow-$b-$turn.csv > $OUT/csv/$b-$turn.log 2>&1; echo "$b $turn exit $?"
  done
done > $OUT/flow.txt 2>&1
tar czf $OUT/csv.tgz -C $OUT csv && rm -rf $OUT/csv
cat $OUT/machine.txt $OUT/flow.txt; grep -h "test result" $OUT/test-*.txt
