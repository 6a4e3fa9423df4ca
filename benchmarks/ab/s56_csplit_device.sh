#!/usr/bin/env bash
# Prepared in session 56, run in session 57 (RESULTS): split-KV for causal query rows over a
# KV cache (branch csplit56; merged in session 57 with a bound, patch file removed;
# split_kv_plan.h, chunk_keys).
# Speculative decoding and short prefill chunks over a cache (2-128 causal rows per sequence)
# on few sequences ran one tile per (sequence, head) (or per packed head group) over all keys,
# far less than a wave: batch 1 x 32 heads = 32 CTAs on 132 SMs. Build the branch
# (`git am -3 benchmarks/ab/csplit56.patch` on main 256eb31 or later, `scripts/gpu-check.sh
# --build-only`; main's .device held that build at the end of session 56), carry
# [".device/lib", ".device/bin"]. ~300 s:
#   1. the split cases (`[kvcache][split]`: the new causal ones, and the chunked-prefill case,
#      now split), the causal small case under memcheck / racecheck, every `[kvcache]` case;
#   2. timing, one library: FLASHKIT_ATTENTION_SPLIT_KV=0 (A, never split) against the default
#      (B), A B B A, benchmarks/attention.py --only-kvcache (causal, bottom-right), 2-16 queries
#      over 1 x 32k / 2 x 16k / 4 x 8k / 8 x 8k keys, contiguous and 128-key pages, GQA 32 / 8
#      and 32 / 4 at head_dim 128 (8 x 8k: split only because the Hopper row counts packed
#      tiles, split_heads_per_tile). Per cell the median us of each side and B / A.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache][split]"
sanitize_both $bin "attention kvcache: causal split-KV small case"
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
# Session 56's test shapes moved back onto their paths after the merged rules (256eb31, not
# run on a GPU then): the varlen pairs cases and their small case under the sanitizers, the
# small packed KV-cache case (its paged half now packs by default) under the sanitizers.
pairs_cases $bin  # stage.sh
sanitize_both $bin "gpu kvcache: packed GQA tiles, small"
kv_ab c FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128 32,4,128" --kv-queries 2,4,8,16 --kv-pages 0,128 \
  --kv-shapes 1x32768,2x16384,4x8192,8x8192  # stage.sh (its "batched" columns: a control, never split)
echo "== done (${SECONDS} s)"
