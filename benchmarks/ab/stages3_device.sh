#!/usr/bin/env bash
# (Ran on the branch's first build, session 34; the second build dropped ZERO_FIRST and turned NARROW
# into a dispatch rule with =0 / =2 overrides: benchmarks/ab/narrow_device.sh.)
# Session 34: three K/V stages where they fit in the Hopper attention kernel (head_dim 96 and
# 128 on 128-key tiles; head_dim 64 had three already), as cuDNN 9.19 runs head_dim 128 here
# (128-key tiles, 227 KiB of shared memory; RESULTS "The Hopper attention kernel against cuDNN's
# in Nsight Compute"), and FLASHKIT_SM90_ATTENTION_NARROW=1 (unmasked head_dim 128 on those
# 128-key, three-stage tiles instead of 176-key, two-stage ones). A = .device-b's library (main
# 5090edd: the same sm90 attention code as main 123a327), B = .device's (branch stages3), N = B
# with NARROW=1, Z = B with FLASHKIT_SM90_ATTENTION_ZERO_FIRST=1 (no clear of O per work tile:
# the first P V GEMM starts from zero). One device call:
#   1. B: flashkit_tests_gpu "[attention]~[sm80]" (Hopper kernel, KV caches, split-KV), the
#      first sm90 grid case again with NARROW=1 and with ZERO_FIRST=1 (and [attention][sm90]
#      under ZERO_FIRST=1), memcheck and racecheck on the sm90 [sanitize] cases (also Z);
#   2. benchmarks/attention.py --family sm90 --head-dims 128 --no-extra --reps 10, order
#      A B N Z Z N B A, FA2 and cuDNN in the same processes;
#   3. FFT_PROBE=1: benchmarks/ab/fft_ncu_device.sh's probe of the short FFT convolutions.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin/flashkit_tests_gpu
gpu_case $bin "[attention]~[sm80]" "B [attention]~[sm80]"
FLASHKIT_SM90_ATTENTION_NARROW=1 gpu_case $bin \
  "sm90 attention: head dims x seqlens x masks (FlashAttention tolerance)" "N sm90 grid case"
FLASHKIT_SM90_ATTENTION_ZERO_FIRST=1 gpu_case $bin "[attention][sm90]" "Z [attention][sm90]"
for tool in memcheck racecheck; do
  sanitize_case $bin $tool "[attention][sm90][sanitize]" B
  FLASHKIT_SM90_ATTENTION_ZERO_FIRST=1 sanitize_case $bin $tool "[attention][sm90][sanitize]" Z
done
AB_ENV_N="FLASHKIT_SM90_ATTENTION_NARROW=1" AB_ENV_Z="FLASHKIT_SM90_ATTENTION_ZERO_FIRST=1" \
  attn_ab "A B N Z Z N B A" --family sm90 --head-dims ${FK_S3_HDIMS:-128} --no-extra --reps 10 --warmup 3
if [ "${FFT_PROBE:-1}" = 1 ]; then
  unset OUT_SET
  bash benchmarks/ab/fft_ncu_device.sh 2>&1 | tail -14
fi
