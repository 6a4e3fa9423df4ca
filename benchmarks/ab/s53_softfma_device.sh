#!/usr/bin/env bash
# Session 53: softcap calls with cap_post folded into the softmax scale and part of their exp2 on
# the FMA pipe (branch softfma53: softmax.cuh ex2_fma, kernel.cuh kSoftcapEmu = 8 / 6 / 4 of 16
# column groups at head_dim 64 / 96 / 128), against the same library with
# FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=0 (the old path: logits formed first, every exp2 on the
# MUFU). Session 52 measured softcap 30 at 0.65-0.78x the plain rate at head_dim 64 and
# 0.76-0.90x at 128 (two MUFU ops a score). One call; carry [".device/lib", ".device/bin",
# ".device-b"] (.device-b/lib.so.xz: main bddd76a, for the plain control).
#   1. the new test "sm90 attention: softcap exponentials partly on the FMA pipe" and the
#      softcap product case, memcheck on the new case's first shapes ([sanitize] not needed:
#      small enough).
#   2. attention.py --softcap 30, head_dim 64 / 128 / 256, 1k / 8k, causal and not, sides
#      A (SOFTCAP_FMA=0) and F (on), order A F F A; then plain cells (no softcap) main (M, from
#      .device-b) against this branch (P), order M P P M.
#   3. head_dim 64 causal on 128-row tiles with pairs (WG3=0) against the default (192-row
#      tiles from 2048 keys; the odd counts at 2k / 8k keep longest first), order D W W D.
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
cap=(--softcap 30 --head-dims 64,128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 10)
L=.device/lib/libflashkit.so
side A_1 $L FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=0 "${cap[@]}"
side F_2 $L FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=1 "${cap[@]}"
side F_3 $L FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=1 "${cap[@]}"
side A_4 $L FLASHKIT_SM90_ATTENTION_SOFTCAP_FMA=0 "${cap[@]}"
mkdir -p "$OUT/cap" && mv "$OUT"/g_* "$OUT/cap/" && python3 benchmarks/ab/attn_ab_table.py "$OUT/cap"
plain=(--head-dims 64,128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 10)
B=.device-b/lib/libflashkit.so
side A_1 $B X=1 "${plain[@]}"
side P_2 $L X=1 "${plain[@]}"
side P_3 $L X=1 "${plain[@]}"
side A_4 $B X=1 "${plain[@]}"
mkdir -p "$OUT/plain" && mv "$OUT"/g_* "$OUT/plain/" && python3 benchmarks/ab/attn_ab_table.py "$OUT/plain"
h64=(--causal 1 --head-dims 64 --seqlens 2048,4096,8192,16384 --no-extra --reps 10)
side A_1 $L X=1 "${h64[@]}"
side W_2 $L FLASHKIT_SM90_ATTENTION_WG3=0 "${h64[@]}"
side W_3 $L FLASHKIT_SM90_ATTENTION_WG3=0 "${h64[@]}"
side A_4 $L X=1 "${h64[@]}"
mkdir -p "$OUT/h64" && mv "$OUT"/g_* "$OUT/h64/" && python3 benchmarks/ab/attn_ab_table.py "$OUT/h64"
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
