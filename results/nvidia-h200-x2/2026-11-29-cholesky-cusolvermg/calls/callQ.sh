#!/usr/bin/env bash
# Call Q (nvidia-h200-x2): tiled Cholesky N = 32,768 at D = 1 and 2 against cusolverMg's
# potrf on both GPUs (scripts/gpu/cholesky-mg.sh, its defaults).
set -u
OUT="$OUT" bash scripts/gpu/cholesky-mg.sh
