#!/usr/bin/env bash
# Session 52: softcap through tanh.approx.f32 (branch softcap52: one MUFU op a score besides the
# softmax's ex2; .device) against the exact ex2 + rcp.approx form (branch softcap51, 0aa7257:
# .device-c/lib.so.xz; two MUFU ops) and main's clamp / abs / copysign / division form
# (c4dcd1d: .device-b/lib.so.xz). The session-52 run of s51_softcap_device.sh on an H100 had
# softcap51 at 0.92-0.98x main at head_dim 64 (128-row tiles there), 1.40-1.46x at head_dim 128,
# seqlen 8k, and the softcap rate still 0.46-0.63x the plain one: the multi-function unit (16
# ops / clk / SM) is the bound. One device call; carry [".device/lib", ".device/bin",
# ".device-b", ".device-c"]. Printed as it goes.
#   1. C's (this branch's) tests with a softcap (sm90 and the sm80-class kernel's), under the
#      unchanged rule (2x the naive error + atol; lse within 2e-4 (1 + |lse|)).
#   2. benchmarks/attention.py --softcap 30 (head_dim 64 / 128 / 256, seqlen 1k / 8k, causal and
#      not), the same cells without softcap (control), the sm80-class kernel forced with softcap
#      (SM80=0 skips), sides in ORDER (default A B C C B A).
#      Without .device-c (the carry passes 64 MiB with it), ORDER="A C C A".
#   3. The rest of [attention][sm90] (REST=0 skips).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
[ -f .device-c/lib.so.xz ] && rm -rf .device-c/lib && cp -a .device/lib .device-c/lib &&
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
  .device-c/lib.so.xz ".device-c/lib/$(basename "$(readlink -f .device/lib/libflashkit.so)")"
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=60 gpu_case "$bin" "sm90 attention: causal x window x softcap\\, the full product on one shape,sm90 attention: head dims x seqlens x masks (FlashAttention tolerance)"
GPU_CASE_LIMIT=90 gpu_case "$bin" "sm80 attention: head dims x seqlens x masks (FlashAttention tolerance),sm80 attention: one-sided windows (upper bound only\\, lower bound only)"
side() {  # SIDE ROUND
  local lib=.device/lib/libflashkit.so
  [ "$1" = A ] && lib=.device-b/lib/libflashkit.so
  [ "$1" = B ] && lib=.device-c/lib/libflashkit.so
  echo "== $1$2"
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --softcap 30 --head-dims 64,128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 10 \
    --json "$OUT/softcap_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-40
  [ "$1" != B ] && LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 40 python3 benchmarks/attention.py \
    --lib "$lib" --head-dims 64,128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 10 \
    --json "$OUT/plain_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-40
  [ "${SM80:-1}" = 1 ] && LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 60 python3 benchmarks/attention.py \
    --lib "$lib" --family sm80 --softcap 30 --head-dims 64,128,256 --seqlens 1024,8192 --no-extra \
    --no-anchors --reps 10 --json "$OUT/softcap80_$1$2.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-40
  echo "(${SECONDS} s)"
}
r=0
for s in ${ORDER:-A B C C B A}; do r=$((r + 1)); side $s $r; done
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=150 gpu_case "$bin" "[attention][sm90]"
echo "== done (${SECONDS} s)"
