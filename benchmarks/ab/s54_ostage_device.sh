#!/usr/bin/env bash
# Prepared in session 54, not run: the output staged in a buffer of its own (branch ostage54,
# kept as benchmarks/ab/ostage54.patch: `git am` it on main, build with
# scripts/gpu-check.sh --build-only). FLASHKIT_SM90_ATTENTION_TMA_STORE=2 sends head_dim 128
# calls that would run 128-key tiles (masked ones, and short unmasked ones) to the 128-key,
# two-stage kernel whose copy-engine output store is waited for only a tile later
# (kernel.cuh, kOStage; ISSUE_EVIDENCE 3a, session 54). Carry [".device/lib", ".device/bin"].
#   1. [attention][sm90] under TMA_STORE=2, memcheck and racecheck on [sm90][sanitize] under it.
#   2. head_dim 128, 512-2048 keys, causal and not: default (A) against TMA_STORE=2 (B) and
#      the V-stage copy-engine stores (C: TMA_STORE=1), one library, A B C C B A, anchors.
#      Reading it (a review's notes): the causal cells are the clean A/B of the store (the
#      same 128-key two-stage kernel on both sides); unmasked 512 / 1024 keys also trade the
#      default's three K/V stages (+5.4% at 512, session 34) for two; unmasked 2048 keys is
#      not `narrow`, so B runs the 176-key V-stage path there, as C does.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]" "TMA_STORE=2 [attention][sm90]"
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 sanitize_case $bin memcheck "[sm90][sanitize]" "TMA_STORE=2"
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 sanitize_case $bin racecheck "[sm90][sanitize]" "TMA_STORE=2"
export AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=X=1 AB_ENV_B=FLASHKIT_SM90_ATTENTION_TMA_STORE=2
export AB_ENV_C=FLASHKIT_SM90_ATTENTION_TMA_STORE=1
attn_ab "A B C C B A" --head-dims 128 --seqlens 512,1024,2048 --causal 0,1 --no-extra --reps 20
echo "== done (${SECONDS} s)"
