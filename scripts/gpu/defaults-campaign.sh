#!/usr/bin/env bash
# The hardware-aware defaults on one GPU (nvidia-h100-x1): chariot's defaults against the best of a grid
# of configurations set by hand (S × stage depth × kernel concurrency), for every
# workload, in one command; then the GPU tests. Run from the repository root on the
# device with the binaries staged in $B (default .gpu/, see scripts/gpu/stage.sh).
# Every comparison alternates the configurations and reports medians; every output is
# checked; every makespan is checked against its hardware bound. STEPS (default: all of
# "demo align seti overhead tests") picks steps; the results README says which run
# gave which figures.
set -euo pipefail
STEPS=${STEPS:-demo align seti overhead tests}   # and "focus": the noisy points again
step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}
W=/tmp/defaults
rm -rf "$W" && mkdir -p "$W"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv; echo "cpus: $(nproc)"; } > "$OUT/machine.txt" 2>&1

if step demo; then
echo "== demo: the default against S {2,4,8,16} x depth {1,2} x kernels {1,2,4}, 7 alternated repeats"
timeout 120 "$B/chariot-demo" --sweep --repeat 7 --out "$W/demo" > "$W/demo.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$W/demo.log"
grep -E "^ +(default|S[0-9])|default .* against|bound check|BOUND|exit" "$W/demo.log" | tail -30 || true
fi

if step align; then
echo "== chariot-align"
"$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > "$W/generate.log" 2>&1 || true
awk -v w="$W" '/^>/{n++} {print > (w "/q" n ".fa")}' "$W/q.fa" || true   # q1 = 63 … q6 = 2047, q7 = 5000
grid=auto
for s in 8 16; do for k in 1 2 4 8; do for d in 1 2; do grid="$grid,lf:$s:k$k:d$d"; done; done; done
five="$grid,$grid,$grid,$grid,$grid"
for q in 6 1; do
  timeout 150 "$B/chariot-align" bench -q "$W/q$q.fa" -d "$W/db.fa" --configs "$five" --cpu-seqs 0 --warmup \
    --csv "$W/align-q$q.csv" > "$W/align-q$q.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$W/align-q$q.log"
  tail -n 3 "$W/align-q$q.log" || true
done
grid7=auto
for s in 8 16; do for k in 1 4 8; do for d in 1 2; do grid7="$grid7,lf:$s:k$k:d$d"; done; done; done
timeout 240 "$B/chariot-align" bench -q "$W/q.fa" -d "$W/db.fa" --together --configs "$grid7,$grid7,$grid7" \
  --cpu-seqs 0 --warmup --csv "$W/align-q7.csv" > "$W/align-q7.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$W/align-q7.log"
tail -n 3 "$W/align-q7.log" || true
echo "-- the plain search, as a user runs it"
timeout 60 "$B/chariot-align" search -q "$W/q.fa" -d "$W/db.fa" --no-progress --top 1 > "$W/align-search.log" 2>&1 || true
grep -E "GCUPS|chosen|adapted" "$W/align-search.log" | cut -c1-160 || true
fi

if step seti; then
echo "== seti 8192^2: auto against S x depth x kernels, 7 alternated repeats"
seti_grid=auto
for s in 2 4 8 16; do for d in 1 2; do for k in 1 4; do seti_grid="$seti_grid,$s:$d:$k"; done; done; done
timeout 150 "$B/seti" --no-incore --repeat 7 --streams "$seti_grid" \
  --out "$W/seti" > "$W/seti.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$W/seti.log"
grep -E "^ +(auto|S[0-9])|default .* against|bound check|BOUND|exit" "$W/seti.log" || true
fi

if step overhead; then
echo "== the overhead study: the default against S {4,8,16} x depth {1,2} x kernels {1,4}, 5 repeats"
timeout 330 "$B/overhead" --backend cuda --ratios 0.1,1,10,100 --sizes fixed,random --seeds 1 --streams 4,8,16 \
  --depths 1,2 --kernels 1,4 --orders fcfs --repeat 5 --no-baselines --out "$W/overhead" 2>&1 \
  | tr '\r' '\n' | grep -v ' runs, ' > "$W/overhead.log" && rc=0 || rc=$?; echo "exit $rc" >> "$W/overhead.log"
grep -E "default \(|worst:" "$W/overhead.log" || true; grep -E "bound check|BELOW|WARNING" "$W/overhead.log" | head -5 || true
fi

if step focus; then
echo "== the noisy points again, more repeats: copy-bound overhead points (15) and q63 (11)"
timeout 300 "$B/overhead" --backend cuda --ratios 10,100 --sizes fixed,random --seeds 1 --streams 4,8,16 \
  --depths 2 --kernels 1,4 --orders fcfs --repeat 15 --no-baselines --out "$W/focus-overhead" 2>&1 \
  | tr '\r' '\n' | grep -v ' runs, ' > "$W/focus-overhead.log" && rc=0 || rc=$?; echo "exit $rc" >> "$W/focus-overhead.log"
grep -E "default \(|worst:" "$W/focus-overhead.log" || true; grep -E "bound check|BELOW|WARNING" "$W/focus-overhead.log" | head -5 || true
[ -f "$W/q1.fa" ] || { "$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > "$W/generate.log" 2>&1
  awk -v w="$W" '/^>/{n++} {print > (w "/q" n ".fa")}' "$W/q.fa"; } || true
c=auto,lf:16:k4:d1,lf:16:k4:d2,lf:16:k8:d2,lf:16:k8:d1
timeout 150 "$B/chariot-align" bench -q "$W/q1.fa" -d "$W/db.fa" --configs "$c,$c,$c,$c,$c,$c,$c,$c,$c,$c,$c" --cpu-seqs 0 --warmup \
  --csv "$W/focus-q1.csv" > "$W/focus-q1.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$W/focus-q1.log"
tail -n 2 "$W/focus-q1.log" || true
fi

tar czf "$OUT/defaults.tgz" -C "$W" --exclude=db.fa --exclude='q*.fa' . || true
if step tests; then
echo "== GPU tests"
(cd "$B" && timeout 200 ./test-gpu --include-ignored --test-threads=1) > "$OUT/gpu-tests.log" 2>&1 && rc=0 || rc=$?; echo "exit $rc" >> "$OUT/gpu-tests.log"
grep -E "^test result|exit|FAILED|panicked" "$OUT/gpu-tests.log" | head -8 || true
fi
