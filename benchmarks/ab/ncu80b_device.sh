#!/usr/bin/env bash
# Session 36, one device call on main's library (.device):
#   1. flashkit_tests_gpu "[attention][sm80]" (f3a3612's host rule for the upper-bound mask had
#      not run on a GPU);
#   2. the forced sm80 grid at 4096-16384 keys (not re-measured since hi80), FA2 / cuDNN anchors;
#   3. Nsight Compute, one launch each, of the forced sm80 kernel and of torch's FlashAttention-2
#      on the non-causal cells still short of FA2 (head_dim 64 / 512, 128 / 2048, 256 / 2048),
#      --page details, and the per-instruction source page of both at head_dim 128 / 2048.
# All CSVs come back in $OUT/ncu80b.tar.gz (read with benchmarks/ncu_compare.py, ncu_sass.py).
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
[ "${FK_N8_TESTS:-1}" = 1 ] && gpu_case $bin "[attention][sm80]"
echo "== forced sm80 grid, long keys"
timeout -k 5 150 python3 benchmarks/attention.py --lib "$LIB" --family sm80 \
  --seqlens ${FK_N8_SEQLENS:-4096,8192,16384} --no-extra --reps 10 --warmup 3 \
  --json "$OUT/grid_long.json" 2>&1 | grep -vE "^\s*$" | cut -c1-220 | tail -24
NDIR=/tmp/fk-ncu80b
attn80_ncu_cell hd128_s2048 128 2048
attn80_ncu_cell hd64_s512 64 512
attn80_ncu_cell hd256_s2048 256 2048
attn80_sass_pair 128 2048
tar czf "$OUT/ncu80b.tar.gz" -C "$NDIR" .
ls -la "$NDIR"
