#!/usr/bin/env bash
# A/B of the lean copy-engine GEMM epilogue (branch epilean) against main in one device call.
# A = main's library (.device-b/lib.so.gz, the library main's `scripts/gpu-check.sh
# --build-only` staged), B = this branch's (.device, staged by the same command here, with the
# branch's GPU tests). Staging here:
#   cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz     # on main, after --build-only
#   git checkout epilean && scripts/gpu-check.sh --build-only && rm -rf .device/model
# then  run(command="bash benchmarks/ab/epilean_device.sh", carry=[".device", ".device-b"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with the other library
echo "== B: [gemm][sm90] (correctness first)"
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 200 .device/bin/flashkit_tests_gpu "[gemm][sm90]" 2>&1 | tail -4
echo "== B: memcheck [sanitize][gemm]"
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 90 compute-sanitizer --tool memcheck .device/bin/flashkit_tests_gpu \
  "[sanitize][gemm]" 2>&1 | tail -2
SHAPES="8192x8192x1024 4096x4096x4096 8192x8192x8192 4096x12288x4096"
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  timeout -k 10 70 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --fp8 --shapes $SHAPES \
    --reps 10 --warmup 3 --json "$OUT/gemm_${side}${round}.json" 2>&1 |
    grep -E "^(gemm|bias|fp8)" | cut -c1-110
}
ab_rounds bench
