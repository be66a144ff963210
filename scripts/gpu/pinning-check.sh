export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
for b in chariot chariot-hi chariot chariot-hi chariot chariot-hi; do
  echo "== $b"; .gpu/$b --streams 3,4 --depths 1,2 --iters 450 2>&1 | sed -n 8,11p | awk '{print $1, $2, $3, $6, $9}'
done
