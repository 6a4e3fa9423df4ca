#!/usr/bin/env bash
# Session 20: where the Hopper GEMM's remaining 3% at 4096^3 goes, per k-tile or per tile. One
# kernel configuration across K (the cooperative schedule, 3 stages: FLASHKIT_SM90_GEMM_SCHEDULE=
# cooperative, FLASHKIT_SM90_GEMM_STAGES=3), without and with clusters of two
# (FLASHKIT_SM90_GEMM_CLUSTER=1|2, branch cluster20's build in .device), timed with cuBLAS
# (torch.matmul) on the same inputs at 4096 x 4096 x K for K = 512 ... 16384 (8 to 256 k-tiles,
# 512 tiles = 3.9 waves), bf16 and fp16, three processes per setting. A line through time
# against k-tiles gives each library's cost per k-tile (slope) and per tile (intercept):
# benchmarks/ab/ksweep_fit.py $OUT/ks_*.json. About 150 s.
# run(command="bash benchmarks/ab/ksweep20_device.sh", carry=[".device"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
for rep in 1 2 3; do
  for cl in 1 2; do
    FLASHKIT_SM90_GEMM_SCHEDULE=cooperative FLASHKIT_SM90_GEMM_STAGES=3 FLASHKIT_SM90_GEMM_CLUSTER=$cl \
      timeout -k 5 80 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 fp16 --no-fused \
      --shapes 4096x4096x512 4096x4096x1024 4096x4096x2048 4096x4096x4096 4096x4096x8192 \
      4096x4096x16384 --reps 20 --warmup 5 --json "$OUT/ks_${cl}_${rep}.json" 2>&1 \
      | grep -E "^gemm" | cut -c1-90 | sed "s/^/cl$cl r$rep /"
    echo "(${SECONDS} s)"
  done
done
ls -la "$OUT"
