#!/usr/bin/env bash
# Session 54, branch seqpairs54, third version: varlen pairs of the longest sequences first
# (B, default) against the same pairs in sequence order (D: FLASHKIT_SM90_ATTENTION_PAIRS=2)
# and the head-sectioned longest-first order (A: PAIRS=0, main's), one library, A B D D B A.
# The second call (sorted only) read mid48 B/A 0.98-1.00 where the first (index order) read
# 1.03-1.05: this call separates the order from the call-to-call spread. Carry [".device/lib",
# ".device/bin"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence" "index64: pairs per sequence"
FLASHKIT_SM90_ATTENTION_PAIRS=2 GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence" "PAIRS=2: pairs per sequence"
GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen*"
export AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_PAIRS=0 AB_ENV_B=X=1
export AB_ENV_D=FLASHKIT_SM90_ATTENTION_PAIRS=2
mid=$(python3 -c "print(','.join(str(128 + (i * 577) % 873) for i in range(48)))")
mix=$(python3 -c "import random; r = random.Random(5); print(','.join([str(r.randint(64, 4096)) for _ in range(32)]))")
tail1=$(python3 -c "import random; r = random.Random(6); print(','.join([str(r.randint(64, 500)) for _ in range(31)] + ['6000']))")
n=0
for spec in "--varlen-heads 16,128" "--varlen-lens $mid --varlen-heads 16,128" "--varlen-lens $mix --varlen-heads 16,128" "--varlen-lens $tail1 --varlen-heads 16,128" "--varlen-lens $mix --varlen-heads 8,256"; do
  n=$((n + 1))
  attn_ab "A B D D B A" --only-varlen --reps 20 $spec 2>&1 | grep -v ', 0, '
  mkdir -p "$OUT/v$n" && mv "$OUT"/g_* "$OUT/v$n/"
done
echo "== done (${SECONDS} s)"
