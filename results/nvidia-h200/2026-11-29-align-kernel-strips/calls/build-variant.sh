#!/usr/bin/env bash
# How each kernel variant binary of variants-2/ and variants-3/ was built (here, from the
# tree before the change, with calls/sw_switch.cu as crates/chariot-align/kernels/sw.cu):
#   bash build-variant.sh NAME STRIP GROUP_CAP E_AFTER_H BEST3 > chariot-align-NAME
# STRIP: SW_R and the host's STRIP; GROUP_CAP: the host's lane group cap;
# E_AFTER_H (SW_EPOST): 1 = E updated as H is computed (two arrays), 0 = hg array (three);
# BEST3 (SW_BEST3): 1 = __vimax3_s16x2_relu every second row, 0 = a relu max every row.
# The variants of this folder: old (the tree before: 16, 32, 0, 0), r16 (16, 32, 1, 1),
# r32 (32, 32, 1, 1), r32g8 (32, 8, 1, 1), r32g8b1 (32, 8, 1, 0), r32g8old (32, 8, 0, 0),
# r32g4 (32, 4, 1, 1), r32g16 (32, 16, 1, 1), r16g8 (16, 8, 1, 1), r16g8old (16, 8, 0, 0).
# new, newg16, newg4 (variants-3) were sw.cu with two alternating H arrays and a pad row
# (not kept), 32-row strips, group caps 8, 16, 4.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
k=crates/chariot-align/kernels/sw.cu; m=crates/chariot-align/src/sw/mod.rs
cp "$k" /tmp/sw.cu.keep; cp "$m" /tmp/mod.rs.keep
trap 'cp /tmp/sw.cu.keep "$k"; cp /tmp/mod.rs.keep "$m"' EXIT
sed -i "s/^#define SW_R 16 /#define SW_R $2 /; s/^#define SW_EPOST 1/#define SW_EPOST $4/; s/^#define SW_BEST3 1/#define SW_BEST3 $5/" "$k"
sed -i "s/^pub const STRIP: usize = 16;/pub const STRIP: usize = $2;/; s/let group = strips.next_power_of_two().min(32) as u32;/let group = strips.next_power_of_two().min($3) as u32;/" "$m"
cargo build --release -p chariot-align --bin chariot-align >&2
cat target/release/chariot-align
