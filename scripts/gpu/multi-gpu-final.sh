#!/usr/bin/env bash
# The multi-GPU work's second campaign on nvidia-h200-x2, binaries staged in $B (default .gpu-x2b/):
# chariot-align (cargo build --release --bin chariot-align), seti (--example seti) and
# overhead (cargo build --release --bench overhead, from target/release/deps), stripped.
# 1. the overhead study at D = 1, 2, chariot timed on a warm scheduler (second batch);
# 2. the alignment bench, queries of 63 and 511 residues, D = 1, 2: LF with one kernel
#    per GPU at a time (the default) and with 4 (`:k4`); the hand-written in-order
#    pipeline at D = 1;
# 3. the two-phase FFT, 8192², D = 1, 2, with ε against the multi-GPU hardware bound.
set -euo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0   # chariot uses no NCCL; never NVLink multicast on shared machines
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu-x2b}; W=/tmp/mg2
rm -rf "$W" && mkdir -p "$W/study"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1
echo "== overhead study, D = 1, 2"
timeout 200 "$B/overhead" --backend cuda --gpus 1,2 --ratios 1,10,100 --sizes fixed,random --seeds 1 --streams 4,8 \
  --orders fcfs,lf --depths 2,3 --trace --out "$W/study" 2>&1 | tr '\r' '\n' | grep -v ' runs, ' > "$W/study/study.log" || true
tail -n 30 "$W/study/study.log" || true
echo "== alignment"
"$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null || true
"$B/chariot-align" generate --sequences 1 --out "$W/d.fa" --queries-out "$W/qx.fa" --query-lengths 63,511 > /dev/null || true
timeout 150 "$B/chariot-align" bench -q "$W/qx.fa" -d "$W/db.fa" --gpus 1 --configs serial,hand:8,lf:8,lf:8:k4 --cpu-seqs 0 \
  --csv "$W/align-d1.csv" > "$W/align-d1.log" 2>&1 || true
timeout 150 "$B/chariot-align" bench -q "$W/qx.fa" -d "$W/db.fa" --gpus 2 --configs serial,lf:8,lf:8:k4 --cpu-seqs 0 \
  --csv "$W/align-d2.csv" > "$W/align-d2.log" 2>&1 || true
tail -n 14 "$W"/align-d*.log || true
echo "== two-phase FFT"
for D in 1 2; do
  timeout 150 "$B/seti" --gpus $D --streams 1,4 --no-incore > "$W/seti-d$D.log" 2>&1 || true
done
tail -n 22 "$W"/seti-d*.log || true
cp "$W"/align-d*.log "$W"/seti-d*.log "$OUT/" 2>/dev/null || true
tar czf "$OUT/mg2.tgz" -C "$W" study align-d1.csv align-d2.csv || true
