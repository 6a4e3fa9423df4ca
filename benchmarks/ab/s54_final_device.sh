#!/usr/bin/env bash
# Session 54: the merged form of varlen pairs per sequence (sequence order, from 6 query tiles,
# tiles spread where the real pairs are fewer than the CTAs) on its own build. Carry
# [".device/lib", ".device/bin", ".device-b"] (.device-b/lib.so.xz: main 9f3ce48's library, =
# 87308bc's kernels). ptxas (-Xptxas -v against main's sources) gives the branch's head_dim
# 128 176-key kernel 120 bytes of spill against 112, head_dim 256 36 / 36 against 32 / 32
# (64-key tiles) and 144 / 116 against 96 / 140 (80-key), head_dim 192 a stack frame of 24
# against 16 (spills equal); head_dim 64 / 96 and every other 128 kernel as main. So the
# cells of those kernels (unmasked from 2k keys, causal from 8k at 128; 192; 256) are timed
# against main's library. Carry [".device/lib", ".device/bin"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence" "index64: pairs per sequence"
sanitize_case $bin memcheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: varlen causal pairs, small"
GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
unset AB_LIB_A
attn_ab "A B B A" --head-dims 128,192,256 --seqlens 2048,8192 --causal 0,1 --no-extra --no-anchors --reps 20
mkdir -p "$OUT/grid" && mv "$OUT"/g_* "$OUT/grid/"
# Pairs (B) against main's order (A: PAIRS=0): stage.sh, pairs_varlen_ab.
pairs_varlen_ab
echo "== done (${SECONDS} s)"
