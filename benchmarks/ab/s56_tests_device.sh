#!/usr/bin/env bash
# (seqpairs54 and qpack55 were merged in session 56 as b74096c and e031566..9ab8ebf, their
# .patch files removed; ostage54.patch stays.)
# Session 56 (device scarce: three starts failed, one machine taken back mid-call): the
# correctness half of session 55's first call, newest change first, on the one build of main +
# seqpairs54.patch + ostage54.patch + qpack55.patch (.device/BUILD_INFO). Left out from
# s55_check_device.sh: the TMA_STORE=2 runs (ostage54 is opt-in, default unchanged). Carry
# [".device/lib", ".device/bin"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=150 gpu_case $bin "[qpack]"
sanitize_both $bin "gpu kvcache: packed GQA tiles, small"
pairs_cases $bin  # stage.sh
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
GPU_CASE_LIMIT=170 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
