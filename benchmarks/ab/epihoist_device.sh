#!/usr/bin/env bash
# A/B of branch epihoist (epiall with the lean epilogue's body picked once per call: 16-bit
# plain / 16-bit with ReLU or tanh GELU / fp32 D) against main, one device call: gemm.py A B B A
# first (what decides), then B's [gemm][sm90] tests in 4 shards and the sanitizers on
# [lean_small]. Staging as in epiall_device.sh (.device = the branch, .device-b/lib.so.gz = main).
# run(command="bash benchmarks/ab/epihoist_device.sh", carry=[".device", ".device-b"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  timeout -k 10 45 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --fp8 \
    --shapes 4096x4096x4096 8192x8192x8192 8192x8192x1024 --reps 10 --warmup 3 \
    --json "$OUT/sm90_${side}${round}.json" 2>&1 | grep -E "^(gemm|bias\+gelu|fp8) " | cut -c1-100
  echo "(gemm.py exit ${PIPESTATUS[0]})"
  timeout -k 10 25 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --no-fused --d-fp32 \
    --shapes 4096x4096x4096 8192x8192x8192 --reps 10 --warmup 3 --label fp32-D \
    --json "$OUT/f32_${side}${round}.json" 2>&1 | grep -E "^gemm " | cut -c1-100
  echo "(gemm.py --d-fp32 exit ${PIPESTATUS[0]})"
}
ab_rounds bench
echo "== B: [gemm][sm90] in 4 shards"
FK_GPU_CHECK_CPP_FILTER="[gemm][sm90]" FK_GPU_CHECK_SANITIZER=0 FK_GPU_CHECK_PYTHON=0 \
  FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_BUDGET=220 FK_GPU_CHECK_CPP_TIMEOUT=210 \
  OUT=/tmp/fk-gc timeout -k 10 230 scripts/gpu-check.sh --run-only 2>&1 | sed -n '/^shard 0/,$p' | head -12
echo "(gpu-check exit ${PIPESTATUS[0]})"
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 50 compute-sanitizer --tool $tool \
    .device/bin/flashkit_tests_gpu "[lean_small]" 2>&1 | grep -E "passed|failed|SUMMARY" | tail -3
  echo "($tool exit ${PIPESTATUS[0]})"
done
