#!/usr/bin/env bash
# Call E (nvidia-h200-x2): the build as committed. The CUDA test; then N = 32 k against
# cusolverMg on both GPUs (scripts/gpu/cholesky-mg.sh: cusolverMg at its best column
# tile, 1,024, and chariot's bench at D = 1 and 2, b = 1,024, 2,048, 4,096, cuSOLVER
# potrf beside it at D = 1; two calls alternated); then 8 k and 16 k at D = 1 with the
# bench's default tiles and cuSOLVER potrf.
set -u
mkdir -p "$OUT"
S="$OUT/summary.txt"; L="$OUT/log.txt"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } >> "$S"
step() { local name="$1"; shift; echo "== $name: $*" >> "$L"; local t0=$(date +%s); "$@" >> "$L" 2>&1; local rc=$?; echo "== $name exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$S" >> "$L"; }
step test .gpu/test-chariot-studies-cholesky --include-ignored --test-threads 1 --nocapture
grep -E "^test |GFLOP|residual" "$L" | grep -v "^test result" >> "$S"
step mg env OUT="$OUT/mg" TILES=1024,2048,4096 MG_TILES=1024 ROUNDS=3 CALLS=2 B=.gpu bash scripts/gpu/cholesky-mg.sh
cat "$OUT/mg/summary.txt" >> "$S"
for f in "$OUT"/mg/chariot-*.log; do echo "== $f"; sed -n '/^medians/,$p' "$f"; done >> "$S"
step small .gpu/cholesky --n 8192,16384 --rounds 3 --csv "$OUT/small.csv"
sed -n '/== small:/,$p' "$L" | sed -n '/^medians/,$p' >> "$S"
tar czf "$OUT/mg.tgz" -C "$OUT" mg && rm -rf "$OUT/mg"
