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
timeout -k 10 200 "$bin" "[attention][sm80]" > "$OUT/t_sm80.log" 2>&1
echo "[attention][sm80]: $(grep -E '^(All tests passed|test cases:)' "$OUT/t_sm80.log" | tail -n1)"
grep -h -B3 -A12 "FAILED" "$OUT"/t_*.log | head -40
for tool in memcheck racecheck; do
  timeout -k 10 120 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm80 attention: small cases,sm80 attention: fully masked rows and empty keys" > "$OUT/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1)"
done
echo "(${SECONDS} s)"
attn_ab "A B B A" --family sm80 --head-dims ${FK_T256_HDIMS:-256} --no-extra --reps 10 --warmup 3
