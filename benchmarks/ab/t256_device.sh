#!/usr/bin/env bash
# Session 34: the sm80-class attention kernel's head_dim 256 bucket on 64 x 64 tiles of 4 warps,
# two CTAs per SM (FlashAttention-2's choice on this GPU, seen in session 24's Nsight Compute
# comparison: 64 x 64, 4 warps, 2 CTAs per SM, issued IPC 1.26 against our 0.99), instead of
# 128 x 64 tiles of 8 warps, one CTA per SM (branch a80t256). A = .device-b's library (main
# 5090edd: the same sm80 attention code as main 123a327), B = .device's. One device call:
#   1. flashkit_tests_gpu "[attention][sm80]" on B; memcheck and racecheck on the small cases
#      (head_dim 40, 96, 256) and the fully-masked case.
#   2. benchmarks/attention.py --family sm80 --head-dims 256 (anchors in the same process),
#      --no-extra --reps 10, order A B B A; per cell medians and B / A, B / FA2.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin/flashkit_tests_gpu
gpu_case $bin "[attention][sm80]"
for tool in memcheck racecheck; do
  sanitize_case $bin $tool "sm80 attention: small cases,sm80 attention: fully masked rows and empty keys"
done
attn_ab "A B B A" --family sm80 --head-dims ${FK_T256_HDIMS:-256} --no-extra --reps 10 --warmup 3
