#!/usr/bin/env bash
# Registers, spills and the SASS opcode mix of the DPX kernel's variants (nvcc there).
set -euo pipefail
NVCC=/usr/local/cuda/bin/nvcc; [ -x $NVCC ] || NVCC=nvcc
mkdir -p "$1"
for cfg in "16 0 0" "16 1 1" "32 0 0" "32 1 0" "32 1 1"; do
  set -- "$1" $cfg
  n=r$2e$3b$4
  $NVCC -arch=sm_90 -cubin -O3 -DSW_ONLY_DPX -DSW_R=$2 -DSW_EPOST=$3 -DSW_BEST3=$4 --resource-usage -o /tmp/$n.cubin .gpu/sw_switch.cu > "$1/$n.usage" 2>&1 || true
  /usr/local/cuda/bin/cuobjdump -sass /tmp/$n.cubin > "$1/$n.sass" 2>&1 || true
  echo "== $n: $(grep -oE 'Used [0-9]+ registers[^\n]*' "$1/$n.usage" | head -1)"
  grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[A-Z0-9_.]+' "$1/$n.sass" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -14 | tr '\n' ' '; echo
done
