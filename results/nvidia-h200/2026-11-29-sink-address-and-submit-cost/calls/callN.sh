set -u
mkdir -p $OUT
P=.gpu/prof
{ lscpu | grep -i "model name\|^CPU(s)\|mhz"; nvidia-smi -L; } > $OUT/machine.txt 2>&1
for rep in 1 2 3; do
 for s in lc:1024 ep:1024 rnd:1024 dag:32; do
  for b in sim cuda; do
   for e in auto replay host; do
     timeout 120 $P $b ${s%%:*} ${s##*:} $e 200 0 2>/dev/null
   done
  done
 done
done > $OUT/submit.txt 2>&1
echo done
