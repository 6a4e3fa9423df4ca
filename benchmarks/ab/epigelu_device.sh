#!/usr/bin/env bash
# A/B of branch epigelu (the lean copy-engine GEMM epilogue also takes ReLU and the tanh GELU)
# against main in one device call. A = main's library (.device-b/lib.so.gz), B = the branch's
# (.device, with the branch's GPU tests). Staging here:
#   on main: scripts/gpu-check.sh --build-only && mkdir -p .device-b &&
#            cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz
#   git checkout epigelu && scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
#   (.device-b/lib.so.gz must be current main's library, not an older one left from a session)
# then  run(command="bash benchmarks/ab/epigelu_device.sh", carry=[".device", ".device-b"]).
# What decides: the fused rows (bias + GELU, 4096^3 and 8192^3) and no loss on the plain rows.
# At 8192^3 both sides run at the power cap (RESULTS.md, session 14), so the A B B A order and
# the 4096^3 row matter more than one reading.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with main's library (A)
# Worst case 250 + 2 x 60 + 4 x 55 = 590 s, under a call's 600 (expected ~250 s in all).
echo "== B: [gemm][sm90] in 4 shards (correctness first; 16-bit ReLU / tanh GELU calls of every case now lean)"
FK_GPU_CHECK_CPP_FILTER="[gemm][sm90]" FK_GPU_CHECK_SANITIZER=0 FK_GPU_CHECK_PYTHON=0 \
  FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_BUDGET=240 FK_GPU_CHECK_CPP_TIMEOUT=230 \
  OUT=/tmp/fk-gc timeout -k 10 250 scripts/gpu-check.sh --run-only 2>&1 | grep -A 60 "^shard 0" | head -70
echo "(gpu-check exit ${PIPESTATUS[0]}; its logs stay out of \$OUT: a call returns at most 8 files)"
echo "== B: memcheck and racecheck [lean_small]"
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 50 compute-sanitizer --tool $tool \
    .device/bin/flashkit_tests_gpu "[lean_small]" 2>&1 | grep -E "passed|failed|SUMMARY" | tail -3
  echo "($tool exit ${PIPESTATUS[0]})"
done
# fp8 128 x 8192 x 8192: split-K on the fp8 4-stage cooperative kernel, whose stack frame the
# lean epilogue grew to 40 bytes (RESULTS.md, "Lean copy-engine epilogue").
SHAPES="4096x4096x4096 8192x8192x8192 8192x8192x1024 128x8192x8192"
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  timeout -k 10 45 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --fp8 --shapes $SHAPES \
    --reps 10 --warmup 3 --json "$OUT/gemm_${side}${round}.json" 2>&1 |
    grep -E "^(gemm|bias|fp8)" | cut -c1-110
  echo "(gemm.py exit ${PIPESTATUS[0]})"
}
ab_rounds bench
