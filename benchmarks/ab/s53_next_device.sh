#!/usr/bin/env bash
# For the session after 53 (prepared, not run): main dc1c548's build in .device (BUILD_INFO), the
# narrowed 192-row rule (head_dim 64 batched causal calls with seqlen_q <= seqlen_k and a wave of
# 192-row tiles take them from 1152 keys) and its test shapes, never run on a GPU. One call;
# carry [".device/lib", ".device/bin", ".device-b"] (.device-b/lib.so.xz: main bddd76a, the
# 2048-key rule, same kernels).
#   1. the 192-row case (shapes d3 / d4 / d5 either side of the gate) and the pairs case (its
#      first shape now 1100 keys on 128-row tiles), then [attention][sm90] (REST=0 skips).
#   2. head_dim 64 causal, this build (B) against bddd76a (A), A B B A, anchors in each
#      process: the grid's batch x seqlen 16384 at 1024-2048 keys, and a small call (batch 1,
#      8 heads: less than a wave of 192-row tiles, which the gate keeps on 128 rows).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=90 gpu_case $bin "sm90 attention: head_dim 64 on three consumer warpgroups (192-row tiles)"
GPU_CASE_LIMIT=90 gpu_case $bin "sm90 attention: causal tiles in pairs of equal work"
attn_ab "A B B A" --causal 1 --head-dims 64 --seqlens 1024,1152,1536,2048 --no-extra --reps 20
mkdir -p "$OUT/grid" && mv "$OUT"/g_* "$OUT/grid/"
attn_ab "A B B A" --causal 1 --head-dims 64 --seqlens 1536 --tokens 1536 --hidden 512 --no-extra --reps 20
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
