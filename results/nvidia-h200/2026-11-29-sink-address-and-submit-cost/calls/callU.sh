# Call U (call T again, six turns, no tests): the submit path's trims (new) against the build before (old, 2a11a6f): the
# GPU tests of new; the per-iteration loop's submit cost (prof, 200 batches a process,
# CUDA, Auto) and the flow bench's loop variant (each in its own process), old and new
# alternated, six turns, the order flipping each turn.
set -u
mkdir -p $OUT/csv
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > $OUT/machine.txt
for turn in 1 2 3 4 5 6; do
  if [ $((turn % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    for s in lc:1024 ep:1024 rnd:1024 dag:32 mr:64; do
      timeout 120 .gpu/prof-$b cuda ${s%%:*} ${s##*:} auto 200 0 2>/dev/null | sed "s/^/$b /"
    done
  done
done > $OUT/submit.txt 2>&1
for turn in 1 2 3 4 5 6; do
  if [ $((turn % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    F=.gpu/flow; [ $b = old ] && F=.gpu/flow-old
    timeout 300 $F --variants chariot --csv $OUT/csv/$b-$turn.csv > $OUT/csv/$b-$turn.log 2>&1; echo "$b $turn exit $?"
  done
done > $OUT/flow.txt 2>&1
tar czf $OUT/csv.tgz -C $OUT csv && rm -rf $OUT/csv
cat $OUT/flow.txt
