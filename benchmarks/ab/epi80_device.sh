#!/usr/bin/env bash
# A/B of branch epi80 (the sm80-class GEMM's plain-D epilogue switches the bias dtype and the
# activation once per 8 values, src/cuda/gemm/sm80/kernel.cuh, epilogue_octet) against main,
# with the sm80 family forced on the H200, in one device call. A = main's library
# (.device-b/lib.so.gz), B = the branch's (.device). Staging here:
#   on main: scripts/gpu-check.sh --build-only && mkdir -p .device-b &&
#            cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz
#   git checkout epi80 && scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# then  run(command="bash benchmarks/ab/epi80_device.sh", carry=[".device", ".device-b"]).
# Static count (sm_80 SASS of the 128 x 128 kernel): 1106 -> 591 instructions between the
# staging read and the first 16-byte store. Worst case about 210 + 60 + 4 x 70 = 550 s: call
# with timeout_s=600. gpu-check writes its logs outside $OUT (a call returns at most 8 files).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with main's library (A)
echo "== B: [gemm][sm80] in 4 shards"
FK_GPU_CHECK_CPP_FILTER="[gemm][sm80]" FK_GPU_CHECK_SANITIZER=0 FK_GPU_CHECK_PYTHON=0 \
  FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_BUDGET=190 FK_GPU_CHECK_CPP_TIMEOUT=180 \
  OUT=/tmp/fk-gc timeout -k 10 200 scripts/gpu-check.sh --run-only 2>&1 | grep -A 60 "^shard 0" | head -70
echo "(gpu-check exit ${PIPESTATUS[0]})"
echo "== B: memcheck on the sm80 epilogue case"
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 50 compute-sanitizer --tool memcheck \
  .device/bin/flashkit_tests_gpu "sm80 gemm: every epilogue on every output dtype,sm80 gemm: column-major D with a bias along the swapped problem's M" 2>&1 |
  grep -E "passed|failed|SUMMARY" | tail -3
echo "(memcheck exit ${PIPESTATUS[0]})"
SHAPES="8192x8192x1024 4096x4096x4096 8192x8192x8192 4096x12288x4096"
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  timeout -k 10 60 python3 benchmarks/gemm.py --lib $lib --family sm80 --dtype bf16 \
    --shapes $SHAPES --reps 10 --warmup 3 --json "$OUT/gemm80_${side}${round}.json" 2>&1 |
    grep -E "^(gemm|bias)" | cut -c1-110
  echo "(gemm.py exit ${PIPESTATUS[0]})"
}
ab_rounds bench
