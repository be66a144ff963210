#!/usr/bin/env bash
# The hardware-aware defaults on two GPUs (nvidia-h200-x2), one command: the host's copy rates per
# direction with both GPUs copying (the D = 2 copy-bound investigation), the overhead
# study at D = 1 and 2 (chariot's defaults against a grid set by hand, the hand-written
# baselines and the static split timed together), and the alignment search and the
# two-phase FFT at D = 2, defaults against hand-set configurations. Binaries staged by
# scripts/gpu/stage.sh in $B (default .gpu/). STEPS (default: all of "host overhead align
# seti") picks steps; the results README says which run gave which figures.
set -euo pipefail
STEPS=${STEPS:-host overhead align seti}
step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: "${OUT:?set OUT to a directory}"
B=${B:-.gpu}
W=/tmp/x2
rm -rf "$W" && mkdir -p "$W"
{
  date -u; nvidia-smi -L; nvidia-smi topo -m; echo "cpus: $(nproc)"
  echo "NUMA nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)"
  for n in /sys/devices/system/node/node*; do echo "$n: cpus $(cat $n/cpulist 2>/dev/null)"; done
  for g in /sys/bus/pci/devices/*; do
    [ "$(cat $g/vendor 2>/dev/null)" = "0x10de" ] && [ "$(cat $g/class 2>/dev/null | cut -c1-6)" = "0x0302" ] \
      && echo "GPU $(basename $g): numa_node $(cat $g/numa_node) local_cpus $(cat $g/local_cpulist) link $(cat $g/current_link_speed 2>/dev/null) x$(cat $g/current_link_width 2>/dev/null)"
  done
} > "$OUT/machine.txt" 2>&1 || true
cat "$OUT/machine.txt" | tail -6 || true

if step host; then
echo "== the host study: per-direction rates, D = 1 and 2; host memory bandwidth"
timeout 120 "$B/overhead" --backend cuda --host-study --gpus 1,2 --max-mib 16 --out "$W/host" > "$W/host.log" 2>&1 || true
grep -v "^ *[12] .*all" "$W/host.log" | tail -4 || true
fi
if step overhead; then
echo "== the overhead study, D = 1 and 2, 5 alternated repeats"
timeout 300 "$B/overhead" --backend cuda --gpus 1,2 --ratios 1,10,100 --sizes fixed,random --seeds 1 \
  --streams 8,16 --depths 2 --kernels 1,4 --orders fcfs --repeat 5 --out "$W/overhead" 2>&1 \
  | tr '\r' '\n' | grep -v ' runs, ' > "$W/overhead.log" || true
grep -E "default \(|worst:" "$W/overhead.log" || true; grep -E "bound check|WARNING" "$W/overhead.log" | head -4 || true
grep -A8 "D > 1: chariot" "$W/overhead.log" || true
fi

if step align; then
echo "== chariot-align, D = 2"
"$B/chariot-align" generate --sequences 536000 --out "$W/db.fa" --queries-out "$W/q.fa" > /dev/null 2>&1 || true
awk -v w="$W" '/^>/{n++} {print > (w "/q" n ".fa")}' "$W/q.fa" || true
c=auto,lf:16:k4:d2,lf:16:k8:d1,lf:16:f4:d2,lf:16:f8:d2,lf:8:k8:d1
timeout 100 "$B/chariot-align" bench -q "$W/q6.fa" -d "$W/db.fa" --gpus 2 --configs "$c,$c,$c" --warmup --cpu-seqs 0 \
  --csv "$W/align-q6-d2.csv" > "$W/align-q6-d2.log" 2>&1 || true
timeout 150 "$B/chariot-align" bench -q "$W/q.fa" -d "$W/db.fa" --gpus 2 --together --configs "$c,$c,$c" --warmup \
  --cpu-seqs 0 --csv "$W/align-q7-d2.csv" > "$W/align-q7-d2.log" 2>&1 || true
grep -E "adapted: .* kept|exit" "$W/align-q7-d2.log" | sort | uniq -c | head -4 || true
fi

if step seti; then
echo "== seti 8192^2, D = 2, 5 alternated repeats"
timeout 120 "$B/seti" --gpus 2 --no-incore --repeat 5 --streams auto,4:2:1,8:2:1,8:2:4,16:2:1,16:2:4 \
  --out "$W/seti" > "$W/seti.log" 2>&1 || true
grep -E "default .* against|bound check|BOUND" "$W/seti.log" || true
fi
tar czf "$OUT/x2.tgz" -C "$W" --exclude=db.fa --exclude='q*.fa' . || true
