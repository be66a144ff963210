#!/usr/bin/env bash
# Call H: where the submitting thread's time goes on the GPU host (perf, cpu-clock).
set -u
mkdir -p "$OUT"; B=.gpu; W=$(mktemp -d)
P="env LD_LIBRARY_PATH=$PWD/$B/perf/lib:/usr/local/cuda/lib64 $B/perf/perf"
{ date -u; nvidia-smi -L; echo "cpus: $(nproc)"; uname -r; cat /proc/sys/kernel/perf_event_paranoid; id -u; } > "$OUT/machine.txt" 2>&1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for s in "dc 10" "rnd 1024" "lc 1024"; do
  set -- $s
  $B/submit_probe --backend cuda --shape $1 --size $2 --batches 200 >> "$OUT/probe.txt" 2>&1
  $P record -F 20000 -e cpu-clock -o $W/$1.data $B/submit_probe --backend cuda --shape $1 --size $2 --batches 2000 >> "$OUT/probe.txt" 2>&1
  echo "record $1 exit $?" >> "$OUT/probe.txt"
  $P report -i $W/$1.data --no-children --sort comm,dso,sym 2>/dev/null | head -200 > $OUT/$1-flat.txt
  $P report -i $W/$1.data --no-children --comm submit_probe --sort sym 2>/dev/null | head -200 > $OUT/$1-submit.txt
  $P record -F 2000 -e cpu-clock --call-graph dwarf,8192 -o $W/$1-g.data $B/submit_probe --backend cuda --shape $1 --size $2 --batches 1000 >> "$OUT/probe.txt" 2>&1
  echo "record -g $1 exit $?" >> "$OUT/probe.txt"
  $P report -i $W/$1-g.data --children --comm submit_probe --sort sym -g none 2>/dev/null | head -250 > $OUT/$1-children.txt
  $P report -i $W/$1-g.data --no-children --comm submit_probe --sort sym -g caller,0.5,callee,function,percent --percent-limit 1 2>/dev/null | head -2000 > $OUT/$1-callers.txt
done
ls -la $OUT
