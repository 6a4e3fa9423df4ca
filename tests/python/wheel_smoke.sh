#!/usr/bin/env bash
# Builds the wheel from the source tree (CPU-only for speed: CUDA compilation is covered by the
# main build), installs it into a scratch folder and imports it from there, outside the source
# tree: `pip install .` works and the wheel is self-contained (libflashkit + KissFFT bundled).
set -euo pipefail
src=$1 work=$2 py=${3:-python3}
rm -rf "$work" && mkdir -p "$work"
"$py" -m pip wheel -q --no-deps --no-build-isolation -w "$work/dist" "$src" \
  -C cmake.define.FLASHKIT_ENABLE_CUDA=OFF -C build-dir="$work/build"
whl=$(ls "$work"/dist/flashkit-*.whl)
echo "built $(basename "$whl")"
unzip -l "$whl" | grep -E "libflashkit|libkissfft|capi" | awk '{print "  " $4}'
"$py" -m pip install -q --no-deps --target "$work/site" "$whl"
cd "$work"
PYTHONPATH="$work/site" "$py" -c "
import flashkit, numpy as np
print('import ok:', flashkit.__version__, flashkit.Context().info()['backend'])
a = np.random.randn(3, 5).astype(np.float32); b = np.random.randn(5, 4).astype(np.float32)
d = flashkit.gemm(a, b)
assert np.allclose(d, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5), 'gemm mismatch'
assert flashkit.__file__.startswith('$work/site'), flashkit.__file__
print('wheel ok')
"
