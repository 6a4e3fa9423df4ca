#!/usr/bin/env bash
# The fp8 attention kernel's in-kernel V transposition by ldmatrix / stmatrix
# (benchmarks/ab/patches/fp8_ldsm_transpose.patch; its layout checked by
# benchmarks/ab/patches/fp8_ldsm_model.py) against the 4-byte-load form, in one library built
# with the patch applied (git apply the patch, scripts/gpu-check.sh --build-only, carry .device):
# FLASHKIT_SM90_FP8_TRANSPOSE=1 selects the new form at run time. Two device calls:
#   STEP=speed (default): the small fp8 case under the new form (both head dims' in-kernel
#     forms with FLASHKIT_SM90_FP8_VT=2) and under compute-sanitizer memcheck, then
#     attention_fp8.py at head_dim 128 and 256 (the latter with FP8_VT=2, so that the long
#     calls show whether the new form removes session 44's loss), order 0 1 1 0;
#   STEP=tests: `[fp8]` with the new form, with the rule and with FLASHKIT_SM90_FP8_VT=2.
# The patch adds a run-time branch and raises the transposers' spills (ptxas: stack 24 -> 104
# bytes at kBatch 4; none inside the unit loop), which may move the default form's time: the
# order-0 runs are that default form, to be compared with main's numbers in RESULTS.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
T=.device/bin/flashkit_tests_gpu
small="gpu attention fp8: small case"
if [ "${STEP:-speed}" = tests ]; then
  for vt in 1 2; do
    echo "== [fp8], FLASHKIT_SM90_FP8_TRANSPOSE=1, FLASHKIT_SM90_FP8_VT=$vt"
    FLASHKIT_SM90_FP8_TRANSPOSE=1 FLASHKIT_SM90_FP8_VT=$vt timeout -k 5 270 "$T" "[fp8]" 2>&1 \
      | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 30
  done
  exit 0
fi
echo "== small case, FLASHKIT_SM90_FP8_TRANSPOSE=1, FLASHKIT_SM90_FP8_VT=2"
FLASHKIT_SM90_FP8_TRANSPOSE=1 FLASHKIT_SM90_FP8_VT=2 timeout -k 5 60 "$T" "$small" 2>&1 | tail -n 4
echo "== memcheck, same"
FLASHKIT_SM90_FP8_TRANSPOSE=1 FLASHKIT_SM90_FP8_VT=2 timeout -k 5 120 \
  "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck "$T" "$small" 2>&1 | tail -n 3
for hd in 128 256; do
  for m in 0 1 1 0; do
    echo "== head_dim $hd, FLASHKIT_SM90_FP8_TRANSPOSE=$m"
    FLASHKIT_SM90_FP8_TRANSPOSE=$m FLASHKIT_SM90_FP8_VT=2 timeout -k 5 100 python3 benchmarks/attention_fp8.py \
      --lib .device/lib --head-dim $hd --seqlens 512 1024 2048 4096 16384 --reps 10 --json "$OUT/ldsm_${hd}_$m.json"
  done
done
