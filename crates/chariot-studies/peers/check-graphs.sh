#!/usr/bin/env bash
# Checks that the peers' C++ graph generators (flow_graphs.hpp) give the very graphs of
# chariot-studies' flow module: builds graph_print.cpp with the host C++ compiler and a
# throw-away Rust program (under .peers/graph-check/, git-ignored) from the flow
# module's own random generators (`random_dag`, `generated` and the constants, cut out
# of src/flow/mod.rs) on rand 0.9, and compares their lines: shape, size, seed, nodes,
# edges, FNV-1a of the edge list. Needs g++ and cargo (offline: rand is in the lock
# file). Exit 0 when every line matches.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
peers=crates/chariot-studies/peers
work=.peers/graph-check
mkdir -p "$work/src"
rand_version=$(awk '/^name = "rand"$/ {getline; v=$3; gsub(/"/, "", v); if (v ~ /^0\.9\./) print v}' Cargo.lock)
cat > "$work/Cargo.toml" <<TOML
[package]
name = "graph-check"
version = "0.1.0"
edition = "2021"
[dependencies]
rand = "=$rand_version"
[workspace]
TOML
python3 - crates/chariot-studies/src/flow/mod.rs "$work/src/main.rs" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
def item(name):
    start = re.search(r"^fn " + name + r"\b", src, re.M).start()
    depth, i = 0, src.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
        if depth == 0:
            return src[start:i]
consts = "\n".join(l for l in src.splitlines() if re.match(r"pub const (MAPPERS|DAG_WIDTH|DAG_FAN_OUT|RND_DEGREE|RND_WINDOW)\b", l))
main = r'''
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn hash(nodes: usize, edges: &[(usize, usize)]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut eat = |v: u64| {
        for b in v.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    };
    eat(nodes as u64);
    for &(a, b) in edges {
        eat(a as u64);
        eat(b as u64);
    }
    h
}

fn default_size(shape: &str) -> usize {
    match shape { "dc" => 10, "mr" => 64, "dag" => 32, _ => 1024 }
}

fn main() {
    for shape in ["lc", "ep", "dc", "mr", "dag", "rnd"] {
        for seed in 1..=3u64 {
            for size in [default_size(shape), 4, 7] {
                let (nodes, edges): (usize, Vec<(usize, usize)>) = match shape {
                    "lc" => (size, (1..size).map(|i| (i - 1, i)).collect()),
                    "ep" => (size, Vec::new()),
                    "dc" => { let n = (1usize << size) - 1; (n, (1..n).map(|c| ((c - 1) / 2, c)).collect()) }
                    "mr" => {
                        let per = MAPPERS + 1;
                        let mut e = Vec::new();
                        for k in 0..size { let base = k * per; for m in 0..MAPPERS {
                            if k > 0 { e.push((base - 1, base + m)); } e.push((base + m, base + MAPPERS)); } }
                        e.sort_unstable_by_key(|&(p, s)| (s, p));
                        (size * per, e)
                    }
                    "dag" => { let (s, e) = random_dag(size, DAG_WIDTH, seed); (s.iter().sum(), e) }
                    _ => (size, generated(size, seed)),
                };
                println!("{shape} {size} {seed} {nodes} {} {:016x}", edges.len(), hash(nodes, &edges));
            }
        }
    }
}
'''
open(sys.argv[2], "w").write("#![allow(dead_code)]\n" + consts + "\n" + item("random_dag") + "\n\n" + item("generated") + "\n" + main)
PY
g++ -O2 -std=c++17 -I"$peers" "$peers/graph_print.cpp" -o "$work/graph_print"
cp Cargo.lock "$work/Cargo.lock" 2>/dev/null || true
cargo run --quiet --offline --release --manifest-path "$work/Cargo.toml" > "$work/rust.txt"
"$work/graph_print" > "$work/cpp.txt"
if diff "$work/rust.txt" "$work/cpp.txt"; then
  echo "check-graphs: $(wc -l < "$work/cpp.txt") graphs identical (Rust flow module and flow_graphs.hpp)"
else
  echo "check-graphs: the C++ generators differ from the Rust ones (lines above: < Rust, > C++)" >&2
  exit 1
fi
