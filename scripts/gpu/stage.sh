#!/usr/bin/env bash
# Builds the release binaries a GPU campaign needs and stages them, stripped, in .gpu/
# (git ignores it; carry it to the device with `carry: [".gpu"]`). The shared
# tools/gpu-stage stages every target with debug info, more than the 64 MiB a device
# call carries; this stages the demo, chariot-align, seti, the overhead study and the
# test executables that hold GPU tests, the image, Cholesky and flow benches, about 35 MiB.
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
    # Test executables: test-NAME for the runtime'"'"'s, test-PACKAGE-NAME for the others'"'"'.
    path, _, rest = m["package_id"].partition("#")  # path+file:///DIR#[NAME@]VERSION
    pkg = rest.split("@")[0] if "@" in rest else path.rstrip("/").split("/")[-1]
    if m["profile"]["test"] and t["kind"][0] != "bench": name = "test-" + (name if pkg == "gpu-chariot" else pkg + "-" + name)
    shutil.copy2(m["executable"], ".gpu/" + name)
    print("  .gpu/" + name)
'
}
cargo build --release --workspace --bin chariot-demo --bin chariot-align --example seti --bench overhead --bench images --bench cholesky --bench flow \
  --message-format=json-render-diagnostics | copy
# The test executables with #[ignore]d GPU tests: the runtime's GPU suite and bad input,
# the runtime's unit tests (the executor source's NVRTC check), the NVRTC check on the
# sim, the in-order pipeline's, the studies' library, bad input, images, cholesky and seti,
# chariot-fft's plans against rustfft, chariot-align end to end.
cargo test --release -p gpu-chariot --lib --test gpu --test bad_input --test resident --test replay --test recorded --test sim_nvrtc --no-run --message-format=json-render-diagnostics | copy
cargo test --release -p chariot-studies --lib --test bad_input --test images --test cholesky --test flow --example seti --no-run --message-format=json-render-diagnostics | copy
cargo test --release -p chariot-inorder --lib --no-run --message-format=json-render-diagnostics | copy
cargo test --release -p chariot-fft --test gpu --no-run --message-format=json-render-diagnostics | copy
cargo test --release -p chariot-align --test end_to_end --test bad_input --no-run --message-format=json-render-diagnostics | copy
strip .gpu/*
du -sh .gpu
