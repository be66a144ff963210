#!/usr/bin/env bash
# The shape of the runtime crate, for the restructuring's evidence: its lines of Rust, its files
# of over 500 lines (with the reason each gives at its top), its direct dependencies and
# the count of all crates it builds with; then the same for every Rust file of the
# repository. Run from anywhere in a checkout: `bash scripts/ci/crate-shape.sh [DIR]`
# (DIR: a checkout, default this one; before the workspace, the runtime was `src/`).
set -euo pipefail
root=${1:-$(git rev-parse --show-toplevel)}
cd "$root"
if [ -d crates/chariot/src ]; then rt=crates/chariot; pkg=chariot; else rt=.; pkg=$(sed -n "s/^name = \"\(.*\)\"$/\1/p" Cargo.toml | head -1); fi
echo "runtime crate: $rt/src"
find "$rt/src" -name '*.rs' | xargs cat | wc -l | awk '{print "  lines of Rust in src/: " $1}'
find "$rt/src" -name '*.rs' | wc -l | awk '{print "  files: " $1}'
echo "  direct dependencies (normal):"
cargo tree -p "$pkg" -e normal --depth 1 --prefix none --offline 2>/dev/null | tail -n +2 | sed 's/^/    /'
cargo tree -p "$pkg" -e normal --prefix none --offline 2>/dev/null | sort -u | wc -l | awk '{print "  crates in its build (normal edges, itself included): " $1}'
echo "Rust files of over 500 lines in the repository (lines, path, the reason at its top):"
git ls-files '*.rs' | while read -r f; do
  n=$(wc -l < "$f")
  if [ "$n" -gt 500 ]; then
    why=$(head -40 "$f" | grep -m1 -i 'file is long' | sed 's/^ *\/\/[!\/] *//' | cut -c1-100 || true)
    printf '%5d %s | %s\n' "$n" "$f" "${why:-(no reason written)}"
  fi
done | sort -rn | sed 's/^/  /'
