#!/usr/bin/env bash
# Follow-up to gemm_grid_device.sh (session 19), one device call on main's build (.device):
#   1. issue 7's grid twice more (auto dispatch: bf16, fp16, fused, fp8; the sm80-class kernel
#      forced), so the consolidated table gives each cell's range over three runs;
#   2. issue 6's forced sm80-class attention grid (benchmarks/attention.py --family sm80, bf16,
#      head_dim 64/128/256, seqlen 512..16k, causal and not, against torch's FlashAttention-2 and
#      cuDNN), last measured in session 1 on an older kernel;
#   3. the compute_80 PTX run for real: CUDA_FORCE_PTX_JIT=1 makes the driver JIT-compile every
#      kernel from PTX instead of loading the sm_90a SASS, so a few sm80-class GEMM and attention
#      cases execute the code that serves GPUs newer than the fat binary's SASS (the sm_90a-only
#      Hopper kernels have no PTX and are not launched by these cases).
# Staging: scripts/gpu-check.sh --build-only; run(command="bash benchmarks/ab/grid_repeat_device.sh",
#   carry=[".device"]). About 400 s; step 3 gets what is left of 560 s.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage name,driver_version,clocks.max.sm,power.limit
for run in 2 3; do
  echo "== 1. grid run $run (auto)"
  timeout -k 5 120 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 fp16 --fp8 --reps 20 \
    --warmup 5 --json "$OUT/grid_auto_$run.json" 2>&1 | grep -E "^(gemm|bias|fp8) " | cut -c1-110
  echo "== 1. grid run $run (sm80 forced)"
  timeout -k 5 120 python3 benchmarks/gemm.py --lib "$LIB" --family sm80 --dtype bf16 fp16 \
    --reps 10 --warmup 3 --json "$OUT/grid_sm80_$run.json" 2>&1 | grep -E "^(gemm|bias) " | cut -c1-110
  echo "(${SECONDS} s)"
done
echo "== 2. attention, sm80-class kernel forced"
timeout -k 5 200 python3 benchmarks/attention.py --lib .device/lib --family sm80 --reps 10 \
  --json "$OUT/attn_sm80.json" 2>&1 | grep -vE "^\s*$" | cut -c1-200 | tail -60
echo "(${SECONDS} s)"
echo "== 3. compute_80 PTX JIT-compiled (CUDA_FORCE_PTX_JIT=1)"
left=$((560 - SECONDS))
if [ $left -gt 60 ]; then
  CUDA_FORCE_PTX_JIT=1 CUDA_CACHE_DISABLE=0 timeout -k 5 $left .device/bin/flashkit_tests_gpu \
    "sm80 gemm: every epilogue on every output dtype,sm80 attention: small cases,sm80 gemm: M N K in {1 7 127 129} with every transpose dtype and epilogue" \
    2>&1 | tail -5
  echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
else
  echo "(skipped: ${SECONDS} s used)"
fi
ls -la "$OUT"
