#!/usr/bin/env bash
# Prepared in session 58 for the next device call (not run yet): what session 58's short lease
# left out on the merged vectorised split-KV kernels (main 36d7c6d). .device holds main's
# build (scripts/gpu-check.sh --build-only; BUILD_INFO says which commit). Carry [".device/lib",
# ".device/bin"], ~300 s:
#   1. `[split]` and `[kvcache]`, and both sanitizers on the two split small cases (racecheck
#      on the element-path case never ran);
#   2. SPLIT_KV=0 (A) against the split (B), A B B A, causal 2-16 queries, GQA 32 / 8 and
#      32 / 4, head_dim 128, contiguous and 128-key pages, over 1 x 32k, 2 x 16k, 4 x 8k and
#      8 x 8k keys (the 8 x 8k rows stay unsplit by the bound: B / A there should read 1.00);
#   3. decode (one query) on the same shapes, for the record (split since 0.5.x).
# Paste the tables into RESULTS "Session 58: main's full GPU check, and the vectorised split-KV
# kernels" (or a new section), with the date, commit, GPU and driver.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
cat .device/BUILD_INFO 2>/dev/null
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=150 gpu_case $bin "[split]"
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
sanitize_both $bin "attention: split-KV where the 16-byte copies do not apply"
sanitize_both $bin "attention kvcache: causal split-KV small case"
kv_ab c FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128 32,4,128" --kv-queries 2,4,8,16 \
  --kv-pages 0,128 --kv-shapes 1x32768,2x16384,4x8192,8x8192
kv_ab d FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128" --kv-queries 1 --kv-pages 0 \
  --kv-shapes 1x32768,2x16384,8x8192,64x2048
echo "== done (${SECONDS} s)"
