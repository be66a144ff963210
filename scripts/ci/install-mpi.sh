#!/usr/bin/env bash
# Installs what the `mpi` feature (the cluster form) builds and runs against, from Debian's
# packages: Open MPI (libopenmpi-dev, openmpi-bin) and libclang (rsmpi generates its
# bindings with bindgen). Does nothing where mpicc, mpirun and libclang are present.
set -euo pipefail
# libclang proper (the C library bindgen loads), not libclang-cpp, which comes without it.
if command -v mpicc >/dev/null && command -v mpirun >/dev/null \
  && ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* 2>/dev/null | grep -q .; then
  exit 0
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  libopenmpi-dev openmpi-bin libclang-dev >/dev/null
