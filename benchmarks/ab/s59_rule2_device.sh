#!/usr/bin/env bash
# Session 59 (not run; for the next session): the DRAM-bandwidth split rule on batched head_dim 128 calls
# (sm90_attention::split_tile_bytes_per_s). .device = that build (BUILD_INFO). Carry
# [".device/lib", ".device/bin"], ~100 s:
#   1. FLASHKIT_ATTENTION_SPLIT_KV=2 (A: two chunks, what the wave rule picks at 64 tiles)
#      against the default (B), A B B A, ten calls between a pair of events: GQA 32 / 8 head_dim
#      128 decode over 8 x 8k keys (batched: B unsplit by the rule; over a contiguous cache and
#      128-key pages: B split as A) and GQA 16 / 2 head_dim 64 over 32 x 8k (B split as A);
#   2. `[split]` if time is left.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
cat .device/BUILD_INFO 2>/dev/null
kv_ab r FLASHKIT_ATTENTION_SPLIT_KV=2 "32,8,128" --kv-queries 1 --kv-pages 0,128 \
  --kv-shapes 8x8192 --kv-calls 10
kv_ab q FLASHKIT_ATTENTION_SPLIT_KV=2 "16,2,64" --kv-queries 1 --kv-pages 0 \
  --kv-shapes 32x8192 --kv-calls 10
GPU_CASE_LIMIT=60 gpu_case .device/bin/flashkit_tests_gpu "[split]"
echo "== done (${SECONDS} s)"
