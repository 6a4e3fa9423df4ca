#!/usr/bin/env bash
# (seqpairs54 and qpack55 were merged in session 56 as b74096c and e031566..9ab8ebf, their
# .patch files removed; ostage54.patch stays.)
# (One build serves all of session 55's scripts: main + seqpairs54.patch + ostage54.patch +
# qpack55.patch, git am -3 in that order; the packing touches only the KV-cache kernels.)
# Prepared in session 55, the second call (after s55_check_device.sh passed) on the same
# next55 build. Carry [".device/lib", ".device/bin", ".device-b"] (.device-b/lib.so.xz: main
# 31ecae3's library; its kernels are 9f3ce48's). Three A/B sets, ~450 s:
#   1. the kernels whose ptxas figures the pairs change moved (head_dim 128 176-key tiles,
#      192, 256; s54_final_device.sh's header): main (A) against next55 (B), A B B A;
#   2. varlen pairs (B) against main's order on the same library (A: PAIRS=0): the issue's row,
#      and 127 sequences of 96-400 tokens with one of 800 (the 6-tile bound's unmeasured side);
#   3. head_dim 128, 512-2048 keys: default (A) against TMA_STORE=2 (B) and =1 (C) on one
#      library, A B C C B A, anchors (read as s54_ostage_device.sh says: the causal cells are the
#      clean A/B of the store; unmasked 512 / 1k also trade three K/V stages for two).
# QUICK=1 drops set 1 (for a call short of time).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
if [ "${QUICK:-0}" != 1 ]; then
  unset AB_LIB_A
  attn_ab "A B B A" --head-dims 128,192,256 --seqlens 2048,8192 --causal 0,1 --no-extra --no-anchors --reps 20
  mkdir -p "$OUT/grid" && mv "$OUT"/g_* "$OUT/grid/"
fi
pairs_varlen_ab  # stage.sh
export AB_ENV_A=X=1 AB_ENV_B=FLASHKIT_SM90_ATTENTION_TMA_STORE=2 AB_ENV_C=FLASHKIT_SM90_ATTENTION_TMA_STORE=1
attn_ab "A B C C B A" --head-dims 128 --seqlens 512,1024,2048 --causal 0,1 --no-extra --reps 20
echo "== done (${SECONDS} s)"
