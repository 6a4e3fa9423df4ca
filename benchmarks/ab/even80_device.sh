#!/usr/bin/env bash
# Session 36 (branch even80): the sm80-class attention kernel specialised for calls with no
# per-element work (kEven: no window, no softcap, positive scale, whole key tiles, full head
# dim, no varlen / seqused_k / paged cache), compiled without the mask, softcap and zero-fill
# code (hd64 key loop 1192 SASS instructions against the general kernel's ~2,900). One library
# (.device), A = FLASHKIT_SM80_ATTENTION_EVEN=0 (the general kernel, SASS identical to pf80's
# measured build), B = default.
#   1. flashkit_tests_gpu "[attention][sm80]" (with the new whole-key-tile case, both kernels);
#      memcheck / racecheck on the new case;
#   2. benchmarks/attention.py --family sm80 --causal 0 --no-extra --reps 10, order A B B A.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
if [ "${FK_EV_TESTS:-1}" = 1 ]; then
  gpu_case $bin "[attention][sm80]"
  for tool in memcheck racecheck; do
    sanitize_case $bin $tool "sm80 attention: whole key tiles*"
  done
fi
AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A="FLASHKIT_SM80_ATTENTION_EVEN=0" \
  attn_ab "A B B A" --family sm80 --causal ${FK_EV_CAUSAL:-0} --seqlens ${FK_EV_SEQLENS:-512,1024,2048,4096,8192,16384} \
  --no-extra --reps 10 --warmup 3
