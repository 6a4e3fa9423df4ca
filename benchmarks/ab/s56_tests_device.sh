#!/usr/bin/env bash
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
sanitize_case $bin memcheck "gpu kvcache: packed GQA tiles, small"
sanitize_case $bin racecheck "gpu kvcache: packed GQA tiles, small"
pc="sm90 attention: varlen causal tiles in pairs per sequence"
GPU_CASE_LIMIT=120 gpu_case $bin "$pc"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "$pc" "index64: pairs per sequence"
sanitize_case $bin memcheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: varlen causal pairs, small"
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
GPU_CASE_LIMIT=170 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
