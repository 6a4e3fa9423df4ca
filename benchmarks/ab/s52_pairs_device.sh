#!/usr/bin/env bash
# Session 52: causal work tiles in pairs of equal work (branch causal52; AttnArgs::pairs,
# tile_scheduler.cuh), against the longest-first order (with head sections where they apply),
# which on an H100 read K and V ~15 times from device memory at head_dim 128 causal 8k (DRAM at
# 60% of peak, the clock 6% below cuDNN's: RESULTS "Causal at 8k keys reads K and V from device
# memory about fifteen times"). FLASHKIT_SM90_ATTENTION_PAIRS=0 (read once per process) keeps
# the old order, so one library serves both sides. One device call, carry [".device/lib",
# ".device/bin"] (scripts/gpu-check.sh --build-only on the branch):
#   1. the new test "sm90 attention: causal tiles in pairs of equal work" (default and with
#      FLASHKIT_SM90_ATTENTION_INDEX64=1), memcheck and racecheck on "sm90 attention: causal
#      pairs, small".
#   2. benchmarks/attention.py --causal 1 over the grid (head_dim 64 / 128 / 256, 512-16k keys),
#      A = PAIRS=0, B = pairs, order A B B A, FA2 and cuDNN in the same processes.
#   3. ncu of head_dim 128 causal 8k with pairs: DRAM throughput against the 59.7% of the
#      longest-first order (NCU=0 skips).
#   4. the rest of [attention][sm90] (REST=0 skips).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
gpu_case $bin "sm90 attention: causal tiles in pairs of equal work"
FLASHKIT_SM90_ATTENTION_INDEX64=1 gpu_case $bin "sm90 attention: causal tiles in pairs of equal work" "pairs, INDEX64=1"
sanitize_case $bin memcheck "sm90 attention: causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: causal pairs, small"
AB_LIB_A=$LIB AB_ENV_A="FLASHKIT_SM90_ATTENTION_PAIRS=0" attn_ab "A B B A" --family sm90 --causal 1 \
  --head-dims 64,128,256 --seqlens ${FK_PAIRS_SEQLENS:-512,1024,2048,4096,8192,16384} --no-extra --reps 10
if [ "${NCU:-1}" = 1 ]; then
  timeout -k 5 90 ncu --clock-control none --nvtx --nvtx-include "prof/" -c 3 --section SpeedOfLight \
    --csv --page details python3 benchmarks/ab/attn_ncu_one.py --lib "$LIB" --which fk \
    --d 128 --s 8192 --causal 1 > "$OUT/ncu_pairs_d128_s8192_c1.csv" 2>&1
  echo "ncu pairs: rc $? (${SECONDS} s)"
  grep -E '"(DRAM Throughput|Duration|SM Frequency|Elapsed Cycles)"' "$OUT/ncu_pairs_d128_s8192_c1.csv" | cut -c1-220 | tail -4
fi
[ "${REST:-1}" = 1 ] && gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
