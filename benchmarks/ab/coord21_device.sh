#!/usr/bin/env bash
# Session 21, branch trace21: main (A, .device-b) against the branch (B, .device) in release
# builds. B computes the cooperative kernel's next tile coordinates under the last wgmma batch,
# skips TileScheduler::coord's divisions for unsplit single-batch problems, and stages the
# 16-bit lean epilogue's whole tile at once (4 boxes a warpgroup). The tracing build had shown
# ~1400 cycles a tile of coordinate arithmetic before each tile's first wgmma and ~670 cycles
# of per-chunk epilogue synchronisation (benchmarks/RESULTS.md, session 21).
#   bash benchmarks/ab/coord21_device.sh ab     A/B, a process per side, order A B B A
#   FK_AB_SHAPES="128x8192x8192 4096x4096x4096" FK_AB_REPS=50 ... ab   other shapes and reps
#   FK_AB_ARGS="--fp8 --skip-main --no-fused --dtype bf16" ... ab   gemm.py's fp8 rows instead
#   bash benchmarks/ab/coord21_device.sh test   B's [gemm][sm90] suite and memcheck of its
#                                               sanitizer cases
# Staging: .device = the branch (scripts/gpu-check.sh --build-only), .device-b/lib.so.gz =
# main's libflashkit.so.<version>, gzipped; carry [".device", ".device-b"] (drop .device/model).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
if [ "${1:-ab}" = test ]; then
  export LD_LIBRARY_PATH=$PWD/.device/lib
  timeout -k 5 ${FK_TEST_LIMIT:-420} .device/bin/flashkit_tests_gpu "[gemm][sm90]" 2>&1 | tail -3
  echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
  timeout -k 5 90 compute-sanitizer --tool memcheck --error-exitcode 9 .device/bin/flashkit_tests_gpu \
    "[gemm][sm90][sanitize]" 2>&1 | grep -E "ERROR SUMMARY|passed|failed" | tail -2
  echo "(memcheck exit ${PIPESTATUS[0]}, ${SECONDS} s)"
  timeout -k 5 90 compute-sanitizer --tool racecheck --error-exitcode 9 .device/bin/flashkit_tests_gpu \
    "[tma_store_small]" 2>&1 | grep -E "RACECHECK SUMMARY|passed|failed" | tail -2
  echo "(racecheck exit ${PIPESTATUS[0]}, ${SECONDS} s)"
  exit 0
fi
side() {
  local args="--dtype bf16 fp16 --no-fused --shapes ${FK_AB_SHAPES:-4096x4096x4096 4096x12288x4096
    8192x8192x8192 8192x8192x1024 16384x16384x16384 128x8192x8192}"
  [ -n "${FK_AB_ARGS:-}" ] && args=$FK_AB_ARGS
  LD_LIBRARY_PATH=$(dirname "$3") timeout -k 5 90 python3 benchmarks/gemm.py --lib "$3" \
    $args --reps ${FK_AB_REPS:-20} --warmup 5 \
    --json "$OUT/ab_$1$2.json" 2>&1 | grep -E "^gemm|^  fp8|^  fused" | cut -c1-120 | sed "s/^/$1 /"
}
ab_rounds side
echo "(${SECONDS} s)"
