#!/usr/bin/env bash
# Session 35: the sm80-class attention kernel's partial key tiles of calls without a left window
# masked by each row's upper bound alone (softmax.cuh mask_hi; FLASHKIT_SM80_ATTENTION_HI_MASK=0
# restores the two-sided mask). One library (.device, branch hi80), A = HI_MASK=0, B = default.
#   1. flashkit_tests_gpu "[attention][sm80]" (with the new one-sided window case); with
#      HI_MASK=0 the grid and one-sided cases; memcheck on "[attention][sm80][sanitize]";
#   2. benchmarks/attention.py --family sm80 --seqlens 512,1024,2048 --no-extra --reps 10,
#      order A B B A, FA2 and cuDNN in the same processes.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
if [ "${FK_H8_TESTS:-1}" = 1 ]; then
  gpu_case $bin "[attention][sm80]" "B [attention][sm80]"
  FLASHKIT_SM80_ATTENTION_HI_MASK=0 gpu_case $bin "sm80 attention: one-sided*" "A (HI_MASK=0) one-sided"
  sanitize_case $bin memcheck "[attention][sm80][sanitize]" B
fi
AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A="FLASHKIT_SM80_ATTENTION_HI_MASK=0" \
  attn_ab "A B B A" --family sm80 --seqlens ${FK_H8_SEQLENS:-512,1024,2048} --no-extra --reps 10 --warmup 3
