#!/usr/bin/env bash
# Session 54, first device call: main 87308bc's build in .device (carry [".device/lib",
# ".device/bin"]). The narrowed 192-row rule of session 53 (head_dim 64 batched causal calls
# with seqlen_q <= seqlen_k and a wave of 192-row tiles take them from 1152 keys) and its test
# shapes had never run on a GPU.
#   1. the 192-row case (shapes either side of the gate) and the causal pairs case.
#   2. head_dim 64 causal, default (B) against FLASHKIT_SM90_ATTENTION_WG3=0 (A: 128-row tiles,
#      the old rule's choice below 2048 keys), one library, A B B A, anchors in each process:
#      the grid's 1024-2048 keys and a small call (batch 1, 8 heads: under a wave of 192-row
#      tiles, which the gate keeps on 128 rows, so A = B there).
#   3. the varlen rows (--only-varlen: the check's read-back and max_seqlen given), default
#      against FLASHKIT_SM90_ATTENTION_SECTIONS=0, two processes each.
#   4. [attention][sm90] (REST=0 skips).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=90 gpu_case $bin "sm90 attention: head_dim 64 on three consumer warpgroups (192-row tiles)"
GPU_CASE_LIMIT=90 gpu_case $bin "sm90 attention: causal tiles in pairs of equal work"
export AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_WG3=0 AB_ENV_B=X=1
attn_ab "A B B A" --causal 1 --head-dims 64 --seqlens 1024,1152,1536,2048 --no-extra --reps 20
mkdir -p "$OUT/grid" && mv "$OUT"/g_* "$OUT/grid/"
attn_ab "A B B A" --causal 1 --head-dims 64 --seqlens 1536 --tokens 1536 --hidden 512 --no-extra --reps 20
mkdir -p "$OUT/small" && mv "$OUT"/g_* "$OUT/small/"
for r in 1 2; do
  attn_side "def_$r" .device/lib/libflashkit.so X=1 --only-varlen --reps 20
  attn_side "nosec_$r" .device/lib/libflashkit.so FLASHKIT_SM90_ATTENTION_SECTIONS=0 --only-varlen --reps 20
done
grep -h 'varlen' "$OUT"/g_def_*.log "$OUT"/g_nosec_*.log | cut -c1-150
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
