#!/usr/bin/env bash
# The cluster form on two GPUs of one host: chariot-align search as 2 ranks x 1 GPU (mpirun,
# each rank its own GPU) against 1 rank x 2 GPUs (one process), alternated, on the
# paper-shaped database (536,000 sequences, prepared) and its 7 queries. The GPU
# image's own Open MPI (4.1, the ABI of Debian's the binary was built against) runs it.
# Binary: $B/chariot-align (default .gpu-mpi/, built with --features mpi); writes
# under $OUT. ROUNDS pairs (default 5). With OLD=DIR, each round also runs the MPI
# form with DIR/chariot-align (an earlier build), after the new one.
set -euo pipefail
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu-mpi}; W=/tmp/mpi-x2; ROUNDS=${ROUNDS:-5}
rm -rf "$W" && mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; nvidia-smi -L; mpirun --version | head -1; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
A=$B/chariot-align
$A generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
$A makedb -d "$W/db.fa" -o "$W/db.cadb" > /dev/null 2>&1 || true
args=(search -q "$W/q.fa" -d "$W/db.cadb" --no-progress --top 10)
now() { date +%s.%N; }
for i in $(seq 1 "$ROUNDS"); do
  t0=$(now)
  timeout 120 "$A" "${args[@]}" --gpus 2 -o "$W/one-$i.tsv" > "$W/one-$i.txt" 2> "$W/one-$i.err" && rc1=0 || rc1=$?
  t1=$(now)
  timeout 120 mpirun -np 2 --bind-to none bash -c \
    'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$A" "${args[@]}" --gpus 1 -o "$W/two-$i.tsv" \
    > "$W/two-$i.txt" 2> "$W/two-$i.err" && rc2=0 || rc2=$?
  t2=$(now)
  old=""
  if [ -n "${OLD:-}" ]; then
    timeout 120 mpirun -np 2 --bind-to none bash -c \
      'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$OLD/chariot-align" "${args[@]}" --gpus 1 -o "$W/old-$i.tsv" \
      > "$W/old-$i.txt" 2> "$W/old-$i.err" && rc3=0 || rc3=$?
    old=" | old build, 2 ranks x 1 GPU: exit $rc3, $(grep -h -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/old-$i.txt" "$W/old-$i.err")" || true
  fi
  echo "round $i | one rank x 2 GPUs: exit $rc1, process $(python3 -c "print(round($t1 - $t0, 3))") s, $(grep -h -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/one-$i.txt" "$W/one-$i.err") | 2 ranks x 1 GPU: exit $rc2, mpirun $(python3 -c "print(round($t2 - $t1, 3))") s, $(grep -h -m1 -oE '[0-9.]+ s, [0-9.]+ GCUPS' "$W/two-$i.txt" "$W/two-$i.err")$old"
done | tee "$OUT/rounds.txt" || true
# The same hits and scores (round 1).
diff <(grep -E '^ +[0-9]+ ' "$W/one-1.txt") <(grep -E '^ +[0-9]+ ' "$W/two-1.txt") > /dev/null && echo "hits: same" || echo "hits: DIFFER"
diff <(tail -n +2 "$W/one-1.tsv" | sort) <(cat "$W/two-1.tsv" "$W/two-1.tsv.rank1" | grep -v '^query' | sort) > /dev/null \
  && echo "scores: same ($(($(wc -l < "$W/one-1.tsv") - 1)) rows)" || echo "scores: DIFFER"
wc -l "$W/two-1.tsv" "$W/two-1.tsv.rank1" | head -2 || true
(cd "$W" && tar czf "$OUT/logs.tgz" one-*.txt one-*.err two-*.txt two-*.err $(cd "$W" && ls old-*.txt old-*.err 2>/dev/null)) || true
