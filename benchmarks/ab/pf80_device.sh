#!/usr/bin/env bash
# Session 36 (branch pf80): the sm80-class attention kernel with (1) its epilogue's 16-byte row
# stores emitted as st.global.v4 (nvcc had split them into four 4-byte STG.E in the swizzled
# head-dim buckets) and (2) Q fragments three k-steps ahead in gemm_qk at head_dim 256 (one row
# tile per warp; ssb stalls on the first MMA of every k-step). A = .device-b's library (main
# 25007e3), B = .device's. head_dim 64 / 128 cells see (1) only (their gemm_qk is unchanged).
#   1. flashkit_tests_gpu "[attention][sm80]" and the KV-cache / decode cases on B; memcheck and
#      racecheck on the small cases;
#   2. benchmarks/attention.py --family sm80 --no-extra --reps 10, order A B B A.
# Staging: main's library, xz-compressed, as .device-b/lib.so.xz, then
# scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
if [ "${FK_PF_TESTS:-1}" = 1 ]; then
  gpu_case $bin "[attention][sm80]"
  gpu_case $bin "[kvcache]"
  for tool in memcheck racecheck; do
    sanitize_case $bin $tool "sm80 attention: small cases,sm80 attention: fully masked rows and empty keys"
  done
fi
attn_ab "A B B A" --family sm80 --seqlens ${FK_PF_SEQLENS:-512,1024,2048,4096,8192,16384} \
  --no-extra --reps ${FK_PF_REPS:-10} --warmup 3
