#!/usr/bin/env bash
# Session 56, the merge build (branch s56: main + seqpairs54 + qpack55, without ostage54, plus
# two rules from this session's timings: packed GQA tiles only past one wave of one head a
# tile, unless FLASHKIT_SM90_ATTENTION_QPACK=2; varlen causal pairs only where total_q / batch
# reaches 3 query tiles). Carry [".device/lib", ".device/bin"]. ~150 s:
#   1. [qpack] by default (the 32-head shapes pack) and under QPACK=2 (every shape packs);
#   2. the packed timing of s55_qpack_device.sh (QPACK=0 A against the default B): the one-wave
#      cells (8 x 8192 keys at 16 / 2 heads) should now read 1.0;
#   3. the varlen pairs A/B (PAIRS=0 A against the default B): the issue's row still paired,
#      127 short sequences and one of 800 now below the mean bound (1.0);
#   4. memcheck on the two small packed cases (9 x 16 heads: packed by default).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=100 gpu_case $bin "[qpack]"
FLASHKIT_SM90_ATTENTION_QPACK=2 GPU_CASE_LIMIT=100 gpu_case $bin "[qpack]" "QPACK=2 [qpack]"
QPACK_PART=time bash benchmarks/ab/s55_qpack_device.sh | tail -n +2
pairs_varlen_ab
sanitize_case $bin memcheck "[qpack][sanitize]"
echo "== done (${SECONDS} s)"
