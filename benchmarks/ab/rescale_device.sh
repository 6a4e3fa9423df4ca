#!/usr/bin/env bash
# Session 37 (branch rescale): the online softmax of the sm80-class and Hopper attention kernels
# keeps a row's running max until a key tile exceeds it by more than 2^8 (FlashAttention-4's
# conditional rescaling; logits.h next_row_max), so that the warp-uniform skip of the output
# rescale (sm80: already there for unchanged maxima; sm90: new) applies to nearly every tile.
# A = .device-b's library (main 95272b4), B = .device's.
#   bash benchmarks/ab/rescale_device.sh sm80   tests [rescale] and [attention][sm80], then the
#                                               forced sm80 grid, A B B A
#   bash benchmarks/ab/rescale_device.sh sm90   tests [attention][sm90], then the Hopper grid,
#                                               A B B A
# Staging: main's library, xz-compressed, as .device-b/lib.so.xz, then
# scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
family=${1:-sm80}
if [ "${FK_RS_TESTS:-1}" = 1 ]; then
  if [ "$family" = sm80 ]; then
    gpu_case $bin "[rescale]"
    gpu_case $bin "[attention][sm80]"
  else
    gpu_case $bin "[attention][sm90]"
  fi
fi
attn_ab "${FK_RS_ORDER:-A B B A}" --family "$family" --seqlens ${FK_RS_SEQLENS:-512,1024,2048,4096,8192,16384} \
  --head-dims ${FK_RS_HEAD_DIMS:-64,128,256} --causal ${FK_RS_CAUSAL:-0,1} --no-extra --reps 10 --warmup 3
