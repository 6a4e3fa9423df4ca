#!/usr/bin/env bash
# Session 53: the 192-row rule for head_dim 64 batched calls without a left window lowered from
# 2048 to 1152 keys (attention_sm90.cpp, kCausalRows192Keys), checked on its build (.device):
# the 192-row test case (new shapes at 1200 / 1160 keys) and the pairs case, then causal
# head_dim 64 against main bddd76a's library (.device-b, the old rule; same kernels), order
# A B B A, anchors in each process. carry [".device/lib", ".device/bin", ".device-b"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=60 gpu_case $bin "sm90 attention: head_dim 64 on three consumer warpgroups (192-row tiles)"
attn_ab "A B B A" --causal 1 --head-dims 64 --seqlens 1024,1152,1536,2048 --no-extra --reps 20
echo "== done (${SECONDS} s)"
