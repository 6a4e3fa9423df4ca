#!/usr/bin/env bash
# Session 59: the Hopper kernel's KV-cache instantiation at head_dim 128 on three K/V stages of
# 128-key tiles (launch.h, cache_stages_for) instead of two. .device = that build (B),
# .device-b/lib.so.xz = the build before it (A: the DRAM-bandwidth split rule, two stages).
# Carry [".device/lib", ".device/bin", ".device-b/lib.so.xz"], ~330 s:
#   1. `[kvcache]` (every KV-cache case, the head_dim 128 ones on the new ring), both
#      sanitizers on the small packed case (a paged head_dim 128 call) and on the split one;
#   2. A against B, A B B A, GQA 32 / 8, head_dim 128: decode unsplit (SPLIT_KV=0 on both
#      sides: one tile's stream rate) and as planned, contiguous and 128-key pages; 4 and 16
#      causal queries; 128 causal queries (a chunk of prefill over a cache). Ten calls between
#      one pair of events (--kv-calls 10): session 59's first A / B of split calls, one call a
#      pair, swung 72-98 us between processes running the same code (the split call's host
#      work, three launches and the descriptors, is not hidden behind a ~75 us GPU time).
#      The batched column's split cells run the plain kernel's varlen inner call on both
#      sides: a control.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=200 gpu_case $bin "[kvcache]"
sanitize_both $bin "gpu kvcache: packed GQA tiles, small"
sanitize_both $bin "attention kvcache: split-KV small case"
export KV_LIB_A=$PWD/.device-b/lib/libflashkit.so
FLASHKIT_ATTENTION_SPLIT_KV=0 kv_ab u X=1 "32,8,128" --kv-queries 1 --kv-pages 0,128 \
  --kv-shapes 1x32768,8x8192,64x2048 --kv-calls 10
kv_ab s X=1 "32,8,128" --kv-queries 1,4,16 --kv-pages 0,128 \
  --kv-shapes 1x32768,4x8192,8x8192,64x2048 --kv-calls 10
kv_ab p X=1 "32,8,128" --kv-queries 128 --kv-pages 128 --kv-shapes 4x8192,16x4096 --kv-calls 10
echo "== done (${SECONDS} s)"
