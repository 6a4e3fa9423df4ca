#!/usr/bin/env bash
# One device call: Nsight Compute on the sm80-class attention kernel (forced) against torch's
# FlashAttention-2 kernel on the same cells, where the forced grid is short of FA2 (head_dim 256
# non-causal 0.82-0.92x, head_dim 128 non-causal 0.93-1.00x; RESULTS "The forced grid
# re-measured on main f0ffcf5"). Per cell and side: one --page details CSV (throughput,
# occupancy, launch, warp states, scheduler, instruction and shared-memory tables) and, for
# head_dim 256, one per-instruction source-page CSV. All CSVs come back in $OUT/ncu80.tar.gz;
# read here with benchmarks/ncu_compare.py and benchmarks/ncu_sass.py.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model
# then  run(command="bash benchmarks/ab/attn80_ncu_device.sh", carry=[".device"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
NDIR=/tmp/fk-ncu80
echo "== timing (no profiler), head_dim 128 / 256 non-causal"
timeout -k 5 120 python3 benchmarks/attention.py --lib "$LIB" --family sm80 --head-dims 128,256 \
  --seqlens 1024,2048 --causal 0 --no-extra --reps 10 2>&1 | grep -vE "^\s*$" | cut -c1-200 | tail -12
attn80_ncu_cell hd256_s2048 256 2048
attn80_ncu_cell hd128_s1024 128 1024
attn80_sass_pair 256 2048
tar czf "$OUT/ncu80.tar.gz" -C "$NDIR" .
ls -la "$NDIR"
