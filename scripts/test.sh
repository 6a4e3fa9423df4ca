#!/usr/bin/env bash
# Builds flashkit and runs every test suite (C/C++, Python, Java, Rust, install, docs) through
# ctest. On a fresh machine it first installs what is missing (scripts/setup-deps.sh).
#   scripts/test.sh            configure (preset "default"), build, run everything
#   FK_PRESET=cpu scripts/test.sh   the same without the CUDA backend
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-deps.sh
FK_DEPS_PROFILE=test fk_install_deps

preset=${FK_PRESET:-default}
jobs=${FK_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/flashkit-ccache}
# Paths relative to the checkout in the cache keys, so that clones at other paths share the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
start=$(date +%s)
fk_log "configuring (preset $preset)"
cmake --preset "$preset" >/dev/null
fk_log "building with $jobs jobs (CUDA kernels take a few minutes the first time)"
cmake --build --preset "$preset" -j "$jobs"
if cmake --build --preset "$preset" --target help 2>/dev/null | grep -q '^docs:'; then
  fk_log "building docs (Doxygen, warnings are errors)"
  cmake --build --preset "$preset" --target docs
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  fk_log "no GPU visible: the gpu and python_gpu suites will report Skipped (by design)"
fi
fk_log "running tests"
ctest --preset "$preset" -j 1 --timeout 1500
fk_log "done in $(( $(date +%s) - start )) s"
