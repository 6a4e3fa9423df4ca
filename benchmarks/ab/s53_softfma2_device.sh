#!/usr/bin/env bash
# Session 53, second call on branch softfma53 after the first (s53_softfma_device.sh): the FMA-pipe
# exp2 and the cap_post fold now only in the head_dim 96 / 128 kernels (4 of 16 column groups);
# head_dim 64 / 192 / 256 and fp8 kernels have main's SASS exactly (checked with cuobjdump). One
# call; carry [".device/lib", ".device/bin", ".device-b"] (.device-b/lib.so.xz: main bddd76a).
#   1. the new softcap test case, the softcap product case, memcheck on the product case.
#   2. softcap 30 at head_dim 96 / 128, 512-8k keys, causal and not: A (SOFTCAP_FMA=0) and F,
#      order A F F A.
#   3. plain (no softcap) head_dim 96 / 128: main (A) against this branch (P), order A P P A A P.
#   4. [attention][sm90] (REST=0 skips).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=90 gpu_case $bin "sm90 attention: softcap exponentials partly on the FMA pipe"
GPU_CASE_LIMIT=60 gpu_case $bin "sm90 attention: causal x window x softcap\\, the full product on one shape"
sanitize_case $bin memcheck "sm90 attention: causal x window x softcap\\, the full product on one shape"
side() { attn_side "$@"; }  # stage.sh
L=.device/lib/libflashkit.so
B=.device-b/lib/libflashkit.so
cap=(--softcap 30 --head-dims 96,128 --seqlens 512,1024,2048,8192 --no-extra --no-anchors --reps 10)
n=0
for s in A F F A; do
  n=$((n + 1)); f=1; [ $s = A ] && f=0
  side ${s}_$n $L FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=$f "${cap[@]}"
done
mkdir -p "$OUT/cap" && mv "$OUT"/g_* "$OUT/cap/" && python3 benchmarks/ab/attn_ab_table.py "$OUT/cap"
plain=(--head-dims 96,128 --seqlens 1024,4096,8192 --no-extra --no-anchors --reps 10)
n=0
for s in A P P A A P; do
  n=$((n + 1)); lib=$L; [ $s = A ] && lib=$B
  side ${s}_$n $lib X=1 "${plain[@]}"
done
mkdir -p "$OUT/plain" && mv "$OUT"/g_* "$OUT/plain/" && python3 benchmarks/ab/attn_ab_table.py "$OUT/plain"
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
