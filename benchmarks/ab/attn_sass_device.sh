#!/usr/bin/env bash
# Session 34: per-SASS-instruction profiles (ncu source page: executed instructions and stall
# samples per instruction) of the Hopper attention kernel at head_dim 128 non-causal 512 and
# 4096 keys (the same 2048 work tiles; their difference is the key loop, the rest is the per-tile
# cost that session 34's comparison with cuDNN points at) and head_dim 64 causal 512 (with its
# details page). Read with benchmarks/ncu_sass.py. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
one() { echo "python3 benchmarks/ab/attn_ncu_one.py --lib $LIB --which fk --d $1 --s $2 --causal $3"; }
SASS_LIMIT=120 sass_profile fk_d128_s512_c0 attention_sm90_kernel 2 $(one 128 512 0)
SASS_LIMIT=120 sass_profile fk_d128_s4096_c0 attention_sm90_kernel 2 $(one 128 4096 0)
SASS_LIMIT=120 sass_profile fk_d64_s512_c1 attention_sm90_kernel 2 $(one 64 512 1)
timeout -k 5 100 ncu --clock-control none -k regex:attention_sm90_kernel -s 2 -c 1 \
  --section SpeedOfLight --section LaunchStats --section InstructionStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis --csv --page details $(one 64 512 1) > "$OUT/ncu_fk_d64_s512_c1.csv" 2>&1
echo "details d64: rc $? (${SECONDS} s)"
cd "$OUT" && gzip -9 sass_*.csv && ls -la
