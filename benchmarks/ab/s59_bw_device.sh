#!/usr/bin/env bash
# Session 59: the split-KV planner's DRAM-bandwidth rule (split_kv_plan.h, tile_bytes_per_s;
# the Hopper row's kSplitTileGBps). .device = the new build (BUILD_INFO), .device-b/lib.so.xz =
# main 36d7c6d's library (A). Carry [".device/lib", ".device/bin", ".device-b/lib.so.xz"],
# ~150 s:
#   1. `[split]` on the new build (the decode split cases; the 8-16 tile shapes still split);
#   2. decode (one query), A = main's library against B = the new one, A B B A: GQA 32 / 8
#      head_dim 128 over 1 x 32k, 2 x 16k, 4 x 8k, 8 x 8k (64 tiles: now unsplit on an H100)
#      and 64 x 2k keys, contiguous and 128-key pages; GQA 16 / 2 head_dim 64 over 16 x 8k
#      (32 tiles, still split) and 32 x 8k (64 tiles, now unsplit);
#   3. the new library, SPLIT_KV=0 against the default, 8 x 8k and 4 x 8k (control);
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=150 gpu_case $bin "[split]"
export KV_LIB_A=$PWD/.device-b/lib/libflashkit.so
kv_ab o X=1 "32,8,128" --kv-queries 1 --kv-pages 0,128 \
  --kv-shapes 1x32768,2x16384,4x8192,8x8192,64x2048
kv_ab p X=1 "16,2,64" --kv-queries 1 --kv-pages 0 --kv-shapes 16x8192,32x8192
unset KV_LIB_A
kv_ab n FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128" --kv-queries 1 --kv-pages 0 \
  --kv-shapes 4x8192,8x8192
# 4. batched decode on the 128-key, three-stage tiles (NARROW=2, A) against the 176-key, two-stage
#    ones (B, default): unsplit (one tile's stream rate) and as planned; the cache column does
#    not change between the sides (a control).
FLASHKIT_ATTENTION_SPLIT_KV=0 kv_ab w FLASHKIT_SM90_ATTENTION_NARROW=2 "32,8,128" --kv-queries 1 \
  --kv-pages 0 --kv-shapes 1x32768,8x8192,64x2048
kv_ab x FLASHKIT_SM90_ATTENTION_NARROW=2 "32,8,128" --kv-queries 1 --kv-pages 0 \
  --kv-shapes 1x32768,2x16384,8x8192
echo "== done (${SECONDS} s)"
