#!/usr/bin/env bash
# Session 54: the merged form of varlen pairs per sequence (sequence order, from 6 query tiles)
# on its own build. Carry [".device/lib", ".device/bin"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence" "index64: pairs per sequence"
sanitize_case $bin memcheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: varlen causal pairs, small"
GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
