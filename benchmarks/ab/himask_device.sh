#!/usr/bin/env bash
# Session 35: partial key tiles of calls without a left window masked by the upper bound alone
# (softmax.cuh mask_hi; FLASHKIT_SM90_ATTENTION_HI_MASK=0 restores the two-sided mask). One
# library (.device), A = HI_MASK=0, B = default. One device call:
#   1. flashkit_tests_gpu "[attention][sm90]" (with the new one-sided window case and session
#      34's unverified 4dbfe61 cases), "[kvcache]"; with HI_MASK=0 the grid, one-sided and
#      mask-product cases; memcheck and racecheck on "[attention][sm90][sanitize]";
#   2. benchmarks/attention.py --family sm90 --no-extra --reps 10 (the 36-cell grid), order
#      A B B A, FA2 and cuDNN in the same processes.
# FK_HM_PART=tests or bench runs one half.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
part=${FK_HM_PART:-all}
if [ "$part" != bench ]; then
  gpu_case $bin "[attention][sm90]" "B [attention][sm90]"
  gpu_case $bin "[kvcache]" "B [kvcache]"
  FLASHKIT_SM90_ATTENTION_HI_MASK=0 gpu_case $bin \
    "sm90 attention: head dims x seqlens x masks*,sm90 attention: one-sided*,sm90 attention: causal x window*" \
    "A (HI_MASK=0) grid, one-sided, mask product"
  for tool in memcheck racecheck; do
    sanitize_case $bin $tool "[attention][sm90][sanitize]" B
  done
fi
if [ "$part" != tests ]; then
  AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A="FLASHKIT_SM90_ATTENTION_HI_MASK=0" \
    attn_ab "A B B A" --family sm90 --no-extra --reps 10 --warmup 3
fi
