#!/usr/bin/env bash
# (seqpairs54 and qpack55 were merged in session 56 as b74096c and e031566..9ab8ebf, their
# .patch files removed; ostage54.patch stays.)
# Prepared in session 55 (no device lent), not run: packed GQA tiles over KV caches (branch
# qpack55 = next55 + the packing, kept on main as benchmarks/ab/qpack55.patch; launch.h,
# q_pack). Carry [".device/lib", ".device/bin"] of that branch's `scripts/gpu-check.sh
# --build-only`. ~300 s.
#   1. the new case ([qpack]: 2-64 queries, GQA groups 2-16, contiguous and paged, every mask),
#      every KV-cache case (the chunked-prefill case, seqlen_q 37 at group 4, packs 2 heads a
#      tile), every sm90 attention case (the plain kernels' sources changed only under
#      `if constexpr` on the KV-cache instantiation: their SASS should be unchanged), and
#      memcheck / racecheck on a small packed case;
#   2. timing, one library: FLASHKIT_SM90_ATTENTION_QPACK=0 (A, one head a tile) against the
#      packing (B), A B B A, benchmarks/attention.py --only-kvcache, causal (bottom-right)
#      queries of 2-16 per sequence over contiguous and 128-key-paged caches, GQA 32/8 and 32/4
#      at head_dim 128, 16/2 at 64, and the same keys through the batched call (packed too).
#      Per cell the median us of each side and B / A (time).
# QPACK_PART=tests or time runs one part (default both); QPACK_SKIP_SM90=1 leaves out
# [attention][sm90] (s55_check_device.sh runs it on the same build). The next session's plan:
# build main + seqpairs54.patch + ostage54.patch + qpack55.patch (git am -3, in that order) once;
# call 1 `bash benchmarks/ab/s55_check_device.sh; QPACK_PART=tests QPACK_SKIP_SM90=1 bash
# benchmarks/ab/s55_qpack_device.sh` (~500 s), call 2 s55_time_device.sh, call 3
# `QPACK_PART=time bash benchmarks/ab/s55_qpack_device.sh`.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
part=${QPACK_PART:-all}
if [ "$part" != time ]; then
  GPU_CASE_LIMIT=150 gpu_case $bin "[qpack]"
  GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
  [ "${QPACK_SKIP_SM90:-0}" = 1 ] || GPU_CASE_LIMIT=170 gpu_case $bin "[attention][sm90]"
  sanitize_both $bin "gpu kvcache: packed GQA tiles, small"
fi
[ "$part" = tests ] && { echo "== done (${SECONDS} s)"; exit 0; }
kv_ab q FLASHKIT_SM90_ATTENTION_QPACK=0 "32,8,128 32,4,128 16,2,64" --kv-queries 2,4,8,16 \
  --kv-pages 0,128 --kv-shapes 64x2048,8x8192  # stage.sh
echo "== done (${SECONDS} s)"
