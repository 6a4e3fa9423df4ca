#!/usr/bin/env bash
# (seqpairs54 and qpack55 were merged in session 56 as b74096c and e031566..9ab8ebf, their
# .patch files removed; ostage54.patch stays.)
# (One build serves all of session 55's scripts: main + seqpairs54.patch + ostage54.patch +
# qpack55.patch, git am -3 in that order; the packing touches only the KV-cache kernels.)
# Prepared in session 55 (no device lent that session), first call of the next session with a
# GPU. Library: branch next55 = main + benchmarks/ab/seqpairs54.patch + ostage54.patch
# (`git worktree add ../s55 -b next55 main; git am -3` both; scripts/gpu-check.sh
# --build-only there, its .device copied here). Correctness of both changes on one build:
#   1. varlen causal pairs per sequence (default on; FLASHKIT_SM90_ATTENTION_PAIRS=0 is main's
#      order): its case with 32- and 64-bit tile indices, memcheck / racecheck on its small case;
#   2. every sm90 attention case, default, then under FLASHKIT_SM90_ATTENTION_TMA_STORE=2 (the
#      output staged in a buffer of its own, copy waited a tile later), and the sanitizers on
#      [sm90][sanitize] under it.
# Carry [".device/lib", ".device/bin"]. Expected ~400-500 s; each step is time-limited.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
pairs_cases $bin  # stage.sh
GPU_CASE_LIMIT=170 gpu_case $bin "[attention][sm90]"
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 GPU_CASE_LIMIT=170 gpu_case $bin "[attention][sm90]" "TMA_STORE=2 [attention][sm90]"
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 sanitize_case $bin memcheck "[sm90][sanitize]" "TMA_STORE=2"
FLASHKIT_SM90_ATTENTION_TMA_STORE=2 sanitize_case $bin racecheck "[sm90][sanitize]" "TMA_STORE=2"
echo "== done (${SECONDS} s)"
