#!/usr/bin/env bash
# Session 49: the sm80-class attention kernel's narrow head_dim-256 tiles (64 x 64, 4 warps,
# 96 KB; tile_size.h kNarrowKind), which GPUs with 99 KB of shared memory per block (sm_86,
# sm_89, sm_120) now run for head_dim 129-256 instead of the generic CUDA-core kernel. On the
# H200 they run only when forced (FLASHKIT_SM80_ATTENTION_NARROW=1, read on every call), so one
# library serves every side. One device call, carry .device (scripts/gpu-check.sh --build-only):
#   1. flashkit_tests_gpu "[attention][sm80]" with the narrow tiles forced; memcheck and
#      racecheck on the small cases with them.
#   2. benchmarks/attention.py --family sm80, head_dim 160 / 256, A = default tiles, B = narrow
#      (order A B B A, FA2 and cuDNN in the same processes): what the narrow tile costs against
#      the default one on the same GPU.
#   3. the same cells on the generic kernel (--family generic, one run): what 99 KB parts ran
#      before, against the narrow tiles.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
export FLASHKIT_SM80_ATTENTION_NARROW=1
gpu_case $bin "[attention][sm80]" "[attention][sm80], narrow tiles forced"
sanitize_case $bin memcheck "sm80 attention: small cases" "narrow"  # head_dim 256, 70 x 133
sanitize_case $bin racecheck "sm80 attention: small cases" "narrow"
unset FLASHKIT_SM80_ATTENTION_NARROW
cells=(--head-dims 160,256 --seqlens ${FK_NARROW_SEQLENS:-1024,4096,16384} --no-extra)
AB_LIB_A=$LIB AB_ENV_B="FLASHKIT_SM80_ATTENTION_NARROW=1" attn_ab "A B B A" --family sm80 \
  "${cells[@]}" --reps 10 --warmup 3
timeout -k 5 240 python3 benchmarks/attention.py --lib "$LIB" --family generic "${cells[@]}" \
  --no-anchors --reps 3 --warmup 1 > "$OUT/generic.log" 2>&1
echo "generic rc $? (${SECONDS} s)"
tail -n 14 "$OUT/generic.log"
