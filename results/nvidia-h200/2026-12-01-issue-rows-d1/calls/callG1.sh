#!/usr/bin/env bash
# Call G1 (one H200): the flow shapes on today's build against every peer, each variant of
# each program in a process of its own (scripts/gpu/flow-peers.sh, OWN=1): the flow
# bench's hand-written CUDA graph, chariot's recorded graph and its per-iteration loop
# (defaults), CUDASTF (stream_ctx, graph_ctx, a graph taken once), the same graph by
# nvcc, Taskflow's tf::cudaGraph (built once, rebuilt); 2 calls of 5 timed rounds, the
# order rotating. The peers are built here from the carried sources (CCCL, Taskflow); the
# scratch folder is kept in the checkout for call G2's Cholesky example.
set -u
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s)
OWN=1 CALLS=2 ROUNDS=5 STEPS="build flow summary" B=.gpu W="$PWD/.peers/w" OUT="$OUT" bash scripts/gpu/flow-peers.sh > "$OUT/peers.log" 2>&1
echo "flow-peers exit $? in $(( $(date +%s) - t0 )) s" >> "$OUT/peers.log"
(cd .peers/w && tar czf "$OUT/logs.tgz" flow-*.csv flow-*.log build-*.log 2>/dev/null)
