#!/usr/bin/env bash
# Re-creates the peers' third-party sources from git snapshots of NVIDIA CCCL and
# Taskflow (bare git directories, e.g. what the `fetch` tool returns for
# github:NVIDIA/cccl and github:taskflow/taskflow) and packs them for a device call.
#
#   bash crates/chariot-studies/peers/pack-sources.sh CCCL_GIT_DIR TASKFLOW_GIT_DIR
#
# Writes (both git-ignored, under .peers/):
#   .peers/src/cccl/      cudax/include, libcudacxx/include, cub/cub, thrust/thrust and
#                         the CUDASTF Cholesky example (07-cholesky.cu), about 24 MB
#   .peers/src/taskflow/  taskflow/ (header-only)
#   .peers/carry/peer-sources.tar.xz   both folders and COMMITS (the snapshots' commits),
#                         about 3 MB: carry `.peers/carry` to the device, where
#                         scripts/gpu/flow-peers.sh unpacks it.
set -euo pipefail
cccl=${1:?usage: pack-sources.sh CCCL_GIT_DIR TASKFLOW_GIT_DIR}
taskflow=${2:?usage: pack-sources.sh CCCL_GIT_DIR TASKFLOW_GIT_DIR}
cd "$(git rev-parse --show-toplevel)"
rm -rf .peers/src .peers/carry
mkdir -p .peers/src/cccl .peers/src/taskflow .peers/carry
# Only the header trees CUDASTF needs and the one example: the whole repository is
# several times the 64 MiB a device call carries.
git --git-dir="$cccl" archive --format=tar HEAD \
  cudax/include libcudacxx/include cub/cub thrust/thrust \
  cudax/examples/stf/linear_algebra/07-cholesky.cu LICENSE \
  | tar -x -C .peers/src/cccl
git --git-dir="$taskflow" archive --format=tar HEAD taskflow LICENSE | tar -x -C .peers/src/taskflow
{
  echo "cccl $(git --git-dir="$cccl" rev-parse HEAD) $(git --git-dir="$cccl" log -1 --format=%cI HEAD)"
  echo "taskflow $(git --git-dir="$taskflow" rev-parse HEAD) $(git --git-dir="$taskflow" log -1 --format=%cI HEAD)"
} > .peers/src/COMMITS
tar -C .peers/src -cJf .peers/carry/peer-sources.tar.xz cccl taskflow COMMITS
du -sh .peers/src/cccl .peers/src/taskflow .peers/carry/peer-sources.tar.xz
