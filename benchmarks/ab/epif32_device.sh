#!/usr/bin/env bash
# A/B of branch epif32 (the lean copy-engine GEMM epilogue also takes fp32 D on the 256-column
# tiles) against main in one device call. A = main's library (.device-b/lib.so.gz), B = the
# branch's (.device, with the branch's GPU tests). Staging here:
#   on main: scripts/gpu-check.sh --build-only && mkdir -p .device-b &&
#            cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz
#   git checkout epif32 && scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# then  run(command="bash benchmarks/ab/epif32_device.sh", carry=[".device", ".device-b"]).
# What decides: bf16 inputs with fp32 D (gemm.py --d-fp32; torch's column keeps bf16 output, so
# compare A with B, not the ratio) gain, and the 16-bit-D rows hold. ptxas (sm_90a): 168
# registers; stack frames as main's or smaller (pingpong128 keeps the general path for fp32 D:
# with it, 56-104 bytes). Worst case 210 + 2 x 70 + 8 x 30 = 590 s; only the fp32-D
# JSON files come back (4).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with main's library (A)
echo "== B: [gemm][sm90] in 4 shards (correctness first)"
FK_GPU_CHECK_CPP_FILTER="[gemm][sm90]" FK_GPU_CHECK_SANITIZER=0 FK_GPU_CHECK_PYTHON=0 \
  FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_BUDGET=190 FK_GPU_CHECK_CPP_TIMEOUT=180 \
  OUT=/tmp/fk-gc timeout -k 10 200 scripts/gpu-check.sh --run-only 2>&1 | grep -A 60 "^shard 0" | head -70
echo "(gpu-check exit ${PIPESTATUS[0]}; its logs stay out of \$OUT: a call returns at most 8 files)"
echo "== B: memcheck and racecheck [lean_small]"
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 60 compute-sanitizer --tool $tool \
    .device/bin/flashkit_tests_gpu "[lean_small]" 2>&1 | grep -E "passed|failed|SUMMARY" | tail -3
  echo "($tool exit ${PIPESTATUS[0]})"
done
SHAPES="4096x4096x4096 8192x8192x8192 8192x8192x1024"
bench() {  # side, round, lib
  local side=$1 round=$2 lib=$3
  # fp32 D first (what the branch changes), then 16-bit D (what must hold)
  for d in --d-fp32 ""; do
    jd=/tmp lab=bf16-D
    [ -n "$d" ] && jd=$OUT lab=fp32-D
    timeout -k 10 20 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --no-fused $d \
      --shapes $SHAPES --reps 10 --warmup 3 --label "$lab" \
      --json "$jd/gemm_${side}${round}.json" 2>&1 | grep -E "^(gemm|  bf16)" | cut -c1-120
    echo "(gemm.py $d exit ${PIPESTATUS[0]})"
  done
}
ab_rounds bench
