#!/usr/bin/env bash
# Session 34: short unmasked head_dim 128 calls (at most 1024 keys) on 128-key tiles through
# three K/V stages (branch stages3 after the first call: launch.h kNarrowStages /
# kNarrowMaxKeys). A = .device-b's library (main 5090edd: main 123a327's sm90 attention code),
# B = .device's. One device call:
#   1. B: flashkit_tests_gpu "[attention][sm90]", the AUTO-dispatched attention cases (general,
#      split-KV, GQA, varlen), the grid and varlen cases with FLASHKIT_SM90_ATTENTION_NARROW=2
#      (every unmasked head_dim 128 call on the new tiles); memcheck and racecheck on the
#      sm90 [sanitize] cases, also with NARROW=2;
#   2. benchmarks/attention.py --family sm90 --head-dims 128 --no-extra --reps 10, order
#      A B B A, FA2 and cuDNN in the same processes.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin/flashkit_tests_gpu
gpu_case $bin "[attention][sm90]" "B [attention][sm90]"
gpu_case $bin "gpu attention:*,attention: split-KV*,attention: GQA*,attention: varlen*" "B AUTO attention cases"
FLASHKIT_SM90_ATTENTION_NARROW=2 gpu_case $bin \
  "sm90 attention: head dims x seqlens x masks*,sm90 attention: varlen (cu_seqlens)*,sm90 attention: long sequence*" \
  "B NARROW=2 grid, varlen, long cases"
for tool in memcheck racecheck; do
  sanitize_case $bin $tool "[attention][sm90][sanitize]" B
  FLASHKIT_SM90_ATTENTION_NARROW=2 sanitize_case $bin $tool "[attention][sm90][sanitize]" "B NARROW=2"
done
attn_ab "A B B A" --family sm90 --head-dims ${FK_NW_HDIMS:-128} --no-extra --reps 10 --warmup 3
