#!/usr/bin/env bash
# Branch epiall (= main + epigelu + epi80 + epif32: the Hopper GEMM's lean copy-engine epilogue
# also takes ReLU, the tanh GELU and fp32 D; the sm80-class plain-D epilogue switches the bias
# dtype and the activation once per 8 values) against main, in two device calls on one warm
# machine. Each change moves its own benchmark rows, so one A/B tells them apart:
#   - epigelu: the fused rows (bf16 GEMM + bias + tanh GELU at 4096^3 and 8192^3);
#   - epif32: the fp32-D rows (gemm.py --d-fp32);
#   - epi80: the sm80-class rows (--family sm80), with bias + GELU;
# and the plain bf16 / fp8 rows must not move.
# Staging here:
#   on main: scripts/gpu-check.sh --build-only && mkdir -p .device-b &&
#            cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz
#   git checkout epiall && scripts/gpu-check.sh --build-only && rm -rf .device/model
# then  run(command="bash benchmarks/ab/epiall_device.sh test", carry=[".device", ".device-b"])
# and at once (the machine stays warm ~30 s)  the same with "bench".
#   test:  B's whole C++ GPU suite (4 shards), compute-sanitizer on [sanitize] (incl.
#          [lean_small]) and on the sm80 epilogue cases, pytest -m gpu (~380 s);
#   bench: gemm.py A B B A (~400 s).
# Run on the H200 in session 18 (benchmarks/RESULTS.md, "Lean epilogue for ReLU, tanh GELU and
# fp32 D, picked once per call"): that run's grep dropped the fused rows (they print as
# "bias+gelu"); the JSON kept them.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with main's library (A)
mode=${1:-bench}
if [ "$mode" = test ]; then
  echo "== B: C++ GPU suite, sanitizers, pytest (no attention switch passes, no demo)"
  FK_GPU_CHECK_VARIANTS=0 FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_BUDGET=480 \
    OUT=/tmp/fk-gc timeout -k 10 500 scripts/gpu-check.sh --run-only 2>&1 |
    sed -n '/^shard 0/,$p' | grep -vE "^\s*$|warnings summary|UserWarning|capture_end|Docs:|^tests/python" | head -40
  echo "(gpu-check exit ${PIPESTATUS[0]}; its logs stay out of \$OUT: a call returns at most 8 files)"
  echo "== B: memcheck on the sm80 epilogue cases"
  LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 60 compute-sanitizer --tool memcheck \
    .device/bin/flashkit_tests_gpu "sm80 gemm: every epilogue on every output dtype,sm80 gemm: column-major D with a bias along the swapped problem's M" 2>&1 |
    grep -E "passed|failed|SUMMARY" | tail -3
  echo "(memcheck exit ${PIPESTATUS[0]})"
  exit 0
fi
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  timeout -k 10 45 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --fp8 \
    --shapes 4096x4096x4096 8192x8192x8192 8192x8192x1024 --reps 10 --warmup 3 \
    --json "$OUT/sm90_${side}${round}.json" 2>&1 | grep -E "^(gemm|bias\+gelu|fp8) " | cut -c1-100
  echo "(gemm.py exit ${PIPESTATUS[0]})"
  timeout -k 10 25 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --no-fused --d-fp32 \
    --shapes 4096x4096x4096 8192x8192x8192 --reps 10 --warmup 3 --label fp32-D \
    --json "/tmp/f32_${side}${round}.json" 2>&1 | grep -E "^gemm " | cut -c1-100
  echo "(gemm.py --d-fp32 exit ${PIPESTATUS[0]})"
  timeout -k 10 50 python3 benchmarks/gemm.py --lib $lib --family sm80 --dtype bf16 \
    --shapes 8192x8192x1024 4096x4096x4096 --reps 10 --warmup 3 \
    --json "$OUT/sm80_${side}${round}.json" 2>&1 | grep -E "^(gemm|bias\+gelu) " | cut -c1-100
  echo "(gemm.py sm80 exit ${PIPESTATUS[0]})"
}
ab_rounds bench
