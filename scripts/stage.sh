#!/usr/bin/env bash
# Builds the release binaries a GPU campaign needs and stages them, stripped, in .gpu/
# (git ignores it; carry it to the device with `carry: [".gpu"]`). The shared
# tools/gpu-stage stages every target with debug info, more than the 64 MiB a device
# call carries; this stages the demo, chariot-align, seti, the overhead study and the
# GPU test executable, about 15 MiB.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf .gpu && mkdir -p .gpu
copy() { # copy the executable artifacts named in cargo's JSON messages as $1-prefixed names
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"): continue
    t = m["target"]; name = t["name"]
    if t["kind"][0] == "test": name = "test-" + name
    shutil.copy2(m["executable"], ".gpu/" + name)
    print("  .gpu/" + name)
'
}
cargo build --release --bin chariot --bin chariot-align --example seti --bench overhead \
  --message-format=json-render-diagnostics | copy
cargo test --release --test gpu --no-run --message-format=json-render-diagnostics | copy
strip .gpu/*
du -sh .gpu
