#!/usr/bin/env bash
# Session 54, branch seqpairs54: varlen causal calls in pairs per sequence (tile_scheduler.cuh,
# seq_prefix). Carry [".device/lib", ".device/bin"] (the branch's build).
#   1. the new cases (also under FLASHKIT_SM90_ATTENTION_INDEX64=1), memcheck and racecheck on
#      the small one.
#   2. varlen rows, pairs (B, default) against FLASHKIT_SM90_ATTENTION_PAIRS=0 (A: the
#      longest-first order in head sections, main's), one library, A B B A: the issue's row
#      (7 sequences, 16 heads, head_dim 128), 48 sequences of 128-1000 tokens, 128 sequences of
#      96-400 tokens (under kSeqPairsMinTiles: A = B expected), 32 of 64-4096, 31 of 64-500
#      and one of 6000, and the 32 at head_dim 256 (8 heads); C: longest first without head
#      sections (PAIRS=0 SECTIONS=0, +18% over A on the issue's row in the first call).
#      Second version (pairs of the longest sequences first, from 6 query tiles on); the
#      first (index order, every count) gave B/A 1.33 / 1.03-1.05 / 0.86 on the first three.
#   3. [attention][sm90] (REST=0 skips).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "sm90 attention: varlen causal tiles in pairs per sequence" "index64: pairs per sequence"
GPU_CASE_LIMIT=60 gpu_case $bin "sm90 attention: varlen causal pairs, small"
sanitize_case $bin memcheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: causal pairs, small"
export AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_PAIRS=0 AB_ENV_B=X=1
export AB_ENV_C="FLASHKIT_SM90_ATTENTION_PAIRS=0 FLASHKIT_SM90_ATTENTION_SECTIONS=0"
mid=$(python3 -c "print(','.join(str(128 + (i * 577) % 873) for i in range(48)))")
many=$(python3 -c "print(','.join(str(96 + (i * 131) % 305) for i in range(128)))")
mix=$(python3 -c "import random; r = random.Random(5); print(','.join([str(r.randint(64, 4096)) for _ in range(32)]))")
tail1=$(python3 -c "import random; r = random.Random(6); print(','.join([str(r.randint(64, 500)) for _ in range(31)] + ['6000']))")
n=0
for spec in "--varlen-heads 16,128" "--varlen-lens $mid --varlen-heads 16,128" "--varlen-lens $many --varlen-heads 16,128" "--varlen-lens $mix --varlen-heads 16,128" "--varlen-lens $tail1 --varlen-heads 16,128" "--varlen-lens $mix --varlen-heads 8,256"; do
  n=$((n + 1))
  attn_ab "${AB_ORDER:-A B C C B A}" --only-varlen --reps 20 $spec
  mkdir -p "$OUT/v$n" && mv "$OUT"/g_* "$OUT/v$n/"
done
[ "${REST:-1}" = 1 ] && GPU_CASE_LIMIT=200 gpu_case $bin "[attention][sm90]"
echo "== done (${SECONDS} s)"
