#!/usr/bin/env bash
# Call H (nvidia-h200): GrCUDA's image DAG stream (resident data at D = 1) with Q placing a
# task by the stage it starts at on its GPU (.gpu) and the build before (.gpu/old: a38b452),
# alternated old, new, new, old; chariot alone, 3 rounds a process.
set -uo pipefail
: "${OUT:?}"; mkdir -p "$OUT"
B=.gpu; W=$OUT; S=$OUT/summary.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi -L; } > $W/machine.txt 2>&1
t0=$(date +%s); turn=0
for v in old new new old; do
  turn=$((turn + 1)); d=$B; [ $v = old ] && d=$B/old
  timeout 100 $d/images --variants chariot --rounds 3 --csv $W/img-$v-$turn.csv > $W/img-$v-$turn.log 2>&1
  echo "images $v turn $turn exit $? at $(( $(date +%s) - t0 )) s" | tee -a $S
done
tail -n 12 $W/img-*.log >> $S
cd $W && tar cJf logs.tar.xz img-* && rm -f img-*
