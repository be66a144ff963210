#!/usr/bin/env bash
# First multi-GPU measurements: the alignment tool and the two-phase FFT at
# D = 1 and D = 2, on the GPU machine, binaries staged in .gpu-mg/. Writes under $OUT.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on the shared machines
B=.gpu-mg; W=/tmp/w; mkdir -p "$W"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
$B/chariot-align generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null || true
$B/chariot-align generate --sequences 1 --out "$W/d.fa" --queries-out "$W/qx.fa" --query-lengths 63,511 > /dev/null || true
for D in 1 2; do
  timeout 120 $B/chariot-align bench -q "$W/qx.fa" -d "$W/db.fa" --gpus $D --configs serial,lf:8 --cpu-seqs 0 \
    --csv "$OUT/align-d$D.csv" > "$OUT/align-d$D.log" 2>&1 || true
done
for D in 1 2; do
  timeout 120 $B/seti --gpus $D --streams 1,4 --no-incore > "$OUT/seti-d$D.log" 2>&1 || true
done
tail -n 25 "$OUT"/align-d*.log "$OUT"/seti-d*.log || true
