#!/usr/bin/env bash
# Miri over the runtime's unit tests that touch host memory through raw pointers or
# shared state: the region claims, the graveyard, host guards with a scheduler on the
# sim, resident data's MSI copies, the task buffer, the task graph and windows, and the
# host allocations (`unsafe` in backend/host_alloc). Miri checks every access against
# Rust's aliasing and allocation rules, which the ordinary test run cannot.
#
# Runs on the nightly toolchain (installed here if missing). About 20 tests; under 10
# minutes on 2 cores. A test Miri cannot run (one that asks the allocator for exabytes)
# is marked `#[cfg_attr(miri, ignore)]` where it is defined.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TERM_COLOR=never
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add --toolchain nightly miri rust-src
cargo +nightly miri setup
# parking_lot's word lock keeps a pointer in an integer (an exposed-provenance cast):
# allowed, without the warning it would print for every test that parks a thread.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-permissive-provenance}"
FILTERS=(
  memory::claims::
  memory::device::
  memory::host::
  ext::resident::memory::
  task::buffer::
  task::graph::
  ext::replay::window::
  backend::host_alloc::
)
# Scale tests: many thousands of claims exercise the index's speed, not its memory
# (Claims holds no unsafe code), and take Miri far longer than the rest together.
SKIP=(--skip memory::claims::test::many_claims_index)
cargo +nightly miri test -p gpu-chariot --lib -- "${FILTERS[@]}" "${SKIP[@]}"
