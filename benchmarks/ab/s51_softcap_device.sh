#!/usr/bin/env bash
# Session 51: the Hopper and sm80-class attention kernels' softcap as cap_post (1 - 2 / (e^{2y} +
# 1)) with ex2 and rcp.approx (branch softcap51, src/cuda/attention/common/softcap.cuh) against
# main's clamp / abs / copysign / division form
# (softcap ran at 0.43-0.64x the plain rate on an H100, session 51's tables). One device call;
# B = .device (the branch, scripts/gpu-check.sh --build-only), A = .device-b/lib.so.xz (main's
# library). Carry [".device/lib", ".device/bin", ".device-b"]. Printed as it goes, so a call cut
# short still reports what ran.
#   1. B's tests with a softcap first (sm90, and the sm80-class kernel's), then the A/B timing,
#      then the rest of [attention][sm90].
#   2. benchmarks/attention.py --softcap 30 (head_dim 64 / 128 / 256, seqlen 1k / 8k, causal and
#      not, flashkit alone) and the same cells without softcap as a control (the change moves
#      the spill stack of most instantiations), and the sm80-class kernel forced with softcap
#      (SM80=0 skips), order A B B A.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=60 gpu_case "$bin" "sm90 attention: causal x window x softcap\\, the full product on one shape,sm90 attention: head dims x seqlens x masks (FlashAttention tolerance)"
GPU_CASE_LIMIT=90 gpu_case "$bin" "sm80 attention: head dims x seqlens x masks (FlashAttention tolerance),sm80 attention: one-sided windows (upper bound only\\, lower bound only)"
side() {  # SIDE ROUND
  local lib=.device/lib/libflashkit.so
  [ "$1" = A ] && lib=.device-b/lib/libflashkit.so
  echo "== $1$2"
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --softcap 30 --head-dims 64,128,256 --seqlens 1024,8192 --no-extra --reps 10 \
    --json "$OUT/softcap_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-70
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 40 python3 benchmarks/attention.py --lib "$lib" \
    --head-dims 64,128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 10 \
    --json "$OUT/plain_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-70
  [ "${SM80:-1}" = 1 ] && LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 60 python3 benchmarks/attention.py \
    --lib "$lib" --family sm80 --softcap 30 --head-dims 64,128,256 --seqlens 1024,8192 --no-extra \
    --no-anchors --reps 10 --json "$OUT/softcap80_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-70
  echo "(${SECONDS} s)"
}
r=0
for s in ${ORDER:-A B B A}; do r=$((r + 1)); side $s $r; done
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=150 gpu_case "$bin" "[attention][sm90]"
echo "== done (${SECONDS} s)"
