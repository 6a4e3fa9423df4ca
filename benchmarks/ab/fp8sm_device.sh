#!/usr/bin/env bash
# Prepared in session 45 (no device was lent that session), not yet run: the fp8 head_dim 128
# kernel's softmax variants of benchmarks/ab/patches/fp8_softmax_variants.patch, chosen at run
# time by FLASHKIT_SM90_FP8_SOFTMAX (0 = as shipped; 2 / 4 / 6 = that many of the 16 8-column
# groups take exp2 on the FMA pipe, ex2_fma, modelled by benchmarks/ab/patches/
# fp8_ex2_fma_model.py; 16 = the row max over four chains a row; 20 = both, 4 groups).
# Build: `git apply benchmarks/ab/patches/fp8_softmax_variants.patch` (it also applies together
# with fp8_ldsm_transpose.patch, in either order), `scripts/gpu-check.sh --build-only`, carry
# .device. Why: at head_dim 128 the fp8 GEMMs of a 128 x 128 tile take ~1,024 clocks and its
# 16,384 MUFU.EX2 as many (RESULTS, "FP8 attention on the fp8 tensor cores"); each warp's
# softmax is a chain of 32 dependent FMNMX a row, then 64 MUFU.EX2 at 8 clocks each on its SM
# sub-partition, which the other warpgroup's GEMMs cannot hide.
#   STEP=speed (default): the fp8 small case (sanitize tag) under each variant, then
#     attention_fp8.py at head_dim 128, variants in the order 0 16 2 4 6 20 20 6 4 2 16 0;
#   STEP=tests: the fp8 native case (every mode) under variants 6 and 20.
# SASS (sm_90a, this session): each ex2_fma is FMNMX.NAN, 3 FADD, 3 FFMA, LEA, FMUL; the same
# 24-byte stack and spill counts as the shipped kernel in every variant; the key-tile loop of
# variant 4 has 342 MUFU.EX2 against 390 (all paths of the loop).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
T=.device/bin/flashkit_tests_gpu
if [ "${STEP:-speed}" = tests ]; then
  for v in 6 20; do
    echo "== FLASHKIT_SM90_FP8_SOFTMAX=$v: [fp8native]"
    FLASHKIT_SM90_FP8_SOFTMAX=$v timeout -k 5 280 "$T" "[fp8native]" 2>&1 \
      | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 20
  done
  exit 0
fi
for v in 2 4 6 16 20; do
  echo "== FLASHKIT_SM90_FP8_SOFTMAX=$v: fp8 small case"
  FLASHKIT_SM90_FP8_SOFTMAX=$v timeout -k 5 60 "$T" "gpu attention fp8: small case" 2>&1 \
    | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 20
done
for v in 0 16 2 4 6 20 20 6 4 2 16 0; do
  echo "== FLASHKIT_SM90_FP8_SOFTMAX=$v"
  FLASHKIT_SM90_FP8_SOFTMAX=$v timeout -k 5 45 python3 benchmarks/attention_fp8.py --lib .device/lib \
    --head-dim 128 --seqlens 1024 4096 16384 --reps 10 --json "$OUT/fp8sm_$v.json"
done
