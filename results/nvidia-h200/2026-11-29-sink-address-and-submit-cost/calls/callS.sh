# Call S: the hand-written graph at its own sink (own process), chariot's recorded graph
# (own process), and both in one process with the hand graph writing chariot's sink, and
# both in one process with their own sinks; three turns, the order rotating. Then the
# flow tests on the GPU.
set -u
mkdir -p $OUT/csv
F=.gpu/flow
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; } > $OUT/machine.txt
run() { # name, args...
  local name=$1; shift
  timeout 300 $F "$@" --csv $OUT/csv/$name.csv > $OUT/csv/$name.log 2>&1; echo "$name exit $?"
}
procs=(graph recorded same own2)
for turn in 1 2 3; do
  for k in 0 1 2 3; do
    p=${procs[$(( (k + turn) % 4 ))]}
    case $p in
      graph) run graph-$turn --variants graph ;;
      recorded) run recorded-$turn --variants recorded ;;
      same) run same-$turn --variants graph,recorded --graph-sink chariot ;;
      own2) run own2-$turn --variants graph,recorded ;;
    esac
  done
done > $OUT/flow.txt 2>&1
timeout 300 .gpu/test-chariot-studies-flow --ignored --test-threads 1 > $OUT/test-flow.txt 2>&1; echo "tests exit $?" >> $OUT/test-flow.txt
tar czf $OUT/csv.tgz -C $OUT csv && rm -rf $OUT/csv
tail -3 $OUT/test-flow.txt; cat $OUT/flow.txt
