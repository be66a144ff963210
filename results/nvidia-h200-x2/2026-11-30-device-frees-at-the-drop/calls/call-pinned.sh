#!/usr/bin/env bash
# The pinned-pages probe (the first command of the session, from the repository root):
# builds scripts/gpu/probes/pinned_pages.cu there and runs it with 8 GiB buffers,
# 32 MiB chunks, three trials of each mode.
cd scripts/gpu/probes && nvcc -O3 -arch=sm_90 pinned_pages.cu -o /tmp/pp 2>&1 | tail -3; mkdir -p $OUT
(nproc; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv; cat /sys/kernel/mm/transparent_hugepage/defrag; grep -i huge /proc/meminfo; free -g) > $OUT/machine.txt 2>&1
timeout 400 /tmp/pp 8 32 3 2>&1 | tee $OUT/pinned-pages.txt
