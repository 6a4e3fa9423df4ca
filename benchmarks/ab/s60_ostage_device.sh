#!/usr/bin/env bash
# Session 60 (prepared, not run): branch ostage60's head_dim 64 copy-engine output path
# (kernel.cuh kOStage: a dedicated staging tile written with stmatrix, the store not waited for
# until the tile is written again; on only with FLASHKIT_SM90_ATTENTION_TMA_STORE=1).
# Low priority: session 54's branch ostage54 did the same at head_dim 128 (4-byte staging
# stores) and measured no gain (RESULTS, session 56: 0.986-1.012, 0.936 at 2k unmasked); this
# one differs in head_dim 64 (the weakest cells, 0.78-0.83x cuDNN causal) and stmatrix.
# .device = main's build (BUILD_INFO), .device-b/lib.so.xz = ostage60's library (stage it:
# FK_GPU_CHECK_STAGE=.device-c scripts/gpu-check.sh --build-only on the branch, then copy
# .device-c/lib/libflashkit.so.0.7.0.xz to .device-b/lib.so.xz). Carry [".device/lib",
# ".device/bin", ".device-b/lib.so.xz"], ~200 s:
#   1. correctness of the branch library with the switch on: `[attention][sm90]` and
#      memcheck / racecheck of `[sm90][sanitize]` (the GPU test binary links libflashkit.so
#      dynamically, so LD_LIBRARY_PATH picks the branch's);
#   2. head_dim 64 cells, 512-2k keys, both masks, A B B A: A = the branch with the switch on,
#      B = main's default register stores; then main's own copy-engine path (V-stage staging)
#      against main's default, for comparison.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
BR=$PWD/.device-b/lib
FLASHKIT_SM90_ATTENTION_TMA_STORE=1 LD_LIBRARY_PATH=$BR GPU_CASE_LIMIT=200 \
  gpu_case .device/bin/flashkit_tests_gpu "[attention][sm90]" "branch, TMA stores: [attention][sm90]"
for tool in memcheck racecheck; do
  FLASHKIT_SM90_ATTENTION_TMA_STORE=1 LD_LIBRARY_PATH=$BR timeout -k 10 150 compute-sanitizer \
    --tool $tool --error-exitcode 9 .device/bin/flashkit_tests_gpu "[sm90][sanitize]" > "$OUT/san_$tool.log" 2>&1
  echo "branch, TMA stores, $tool: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.log" | tail -1) (${SECONDS} s)"
done
AB_LIB_A=$BR/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_TMA_STORE=1 AB_ENV_B=X=0 \
  attn_ab "A B B A" --family sm90 --head-dims 64 --seqlens 512,1024,2048 --no-extra --no-anchors --reps 20
rm -f "$OUT"/g_*.json
AB_LIB_A=$LIB AB_ENV_A=FLASHKIT_SM90_ATTENTION_TMA_STORE=1 AB_ENV_B=X=0 \
  attn_ab "A B B A" --family sm90 --head-dims 64 --seqlens 512,1024,2048 --no-extra --no-anchors --reps 20
echo "== done (${SECONDS} s)"
