#!/usr/bin/env bash
# Session 37, last call on main (the lagging running max merged): the attention cases not run
# on it yet (decode packing, dispatch, varlen NaN, graphs: "[attention]" without the sm80 / sm90
# / kvcache / split tags, which ran on the branch), then the Hopper kernel at head_dim 192 (the
# lagging max applies there too, untimed so far), A = .device-b's library (main 95272b4), B =
# .device's, A B B A.
# Staging: main 95272b4's library as .device-b/lib.so.xz; scripts/gpu-check.sh --build-only &&
# rm -rf .device/model .device/bin/flashkit_tests_cpu; carry .device and .device-b. Run after
# FK_GPU_CHECK_CPP=0 FK_GPU_CHECK_SANITIZER=0 FK_GPU_CHECK_DEMO=0 scripts/gpu-check.sh --run-only
# (pytest) in the same call.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
gpu_case .device/bin/flashkit_tests_gpu "[rescale]"
gpu_case .device/bin/flashkit_tests_gpu "[attention]~[sm80]~[sm90]~[kvcache]~[split]"
attn_ab "A B B A" --family sm90 --head-dims 192 --seqlens ${FK_F37_SEQLENS:-1024,4096,16384} \
  --no-extra --reps 10 --warmup 3
# head_dim 256 tile width under the lagging max: A = default (64-key tiles up to 512 keys, 1024
# causal), K = FLASHKIT_SM90_ATTENTION_KEYS64=2 (64-key tiles everywhere), Z = 0 (80-key tiles
# everywhere), one library, A K Z Z K A.
OUT=/tmp/fk-k64
mkdir -p "$OUT"
AB_LIB_A=.device/lib/libflashkit.so AB_ENV_K="FLASHKIT_SM90_ATTENTION_KEYS64=2" \
  AB_ENV_Z="FLASHKIT_SM90_ATTENTION_KEYS64=0" \
  attn_ab "A K Z Z K A" --family sm90 --head-dims 256 --seqlens 512,1024,2048,4096 \
  --no-extra --reps 10 --warmup 3
