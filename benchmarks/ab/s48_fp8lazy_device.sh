#!/usr/bin/env bash
# Session 48 (prepared, for a later device call): fp8 attention at head_dim 128 with the lagging
# row max and the skipped O rescale (softmax.cuh kLazy, used at head_dim > 128 since session 37)
# against the shipped kernel, in one library: benchmarks/ab/patches/fp8_lazy128.patch, switch
# FLASHKIT_SM90_FP8_LAZY=1. Why: session 47 found the fp8 softmax issue-bound, not MUFU-bound;
# the O rescale is 64 FMULs a thread per key tile (as many as the tile's scores), which the lazy
# form skips for nearly every tile after a row's first. P then reaches 256 (e4m3's largest finite
# value is 448).
# Staging (here): build the branch's library (patch applied) with scripts/gpu-check.sh
# --build-only in a worktree, then xz its versioned library file into .device-b/lib.so.xz with a
# BUILD_INFO line (done in session 48: .device-b holds it, 20 MB). Carry [".device/lib",
# ".device/bin", ".device-b"] (57 MB; all of .device and .device-b pass the 64 MiB limit).
# Run: bash benchmarks/ab/s48_fp8lazy_device.sh
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
T=.device/bin/flashkit_tests_gpu
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" .device-b/lib.so.xz "$(readlink -f .device/lib/libflashkit.so)"
cat .device-b/BUILD_INFO
for v in 1 0; do
  echo "== FLASHKIT_SM90_FP8_LAZY=$v: fp8 cases (${SECONDS} s)"
  FLASHKIT_SM90_FP8_LAZY=$v timeout -k 5 150 "$T" "[fp8]" 2>&1 | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 20
done
for v in 0 1 1 0; do
  [ $SECONDS -gt ${STOP:-420} ] && { echo "skip lazy $v (${SECONDS} s)"; continue; }
  echo "== FLASHKIT_SM90_FP8_LAZY=$v (${SECONDS} s)"
  FLASHKIT_SM90_FP8_LAZY=$v timeout -k 5 60 python3 benchmarks/attention_fp8.py --lib .device/lib \
    --head-dim 128 --seqlens 512 1024 4096 16384 --reps 10 --json "$OUT/fp8lazy_$v.json" 2>&1 | grep -v '^json'
done
echo "== done (${SECONDS} s)"
