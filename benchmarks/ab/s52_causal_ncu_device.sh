#!/usr/bin/env bash
# Session 52: why head_dim 128 causal runs at 0.81x the non-causal rate at 8k keys (557 against
# 686 TFLOP/s on an H100) where cuDNN keeps 0.89x (601 / 678). Nsight Compute, up to three launches each
# (the first inside benchmarks/ab/attn_ncu_one.py's NVTX range "prof"), --page details with
# the sections of attn_ncu_device.sh: flashkit causal, flashkit non-causal, cuDNN causal, bf16,
# batch 2, 16 heads, seqlen 8192 (the grid's cell). CSVs in $OUT (read with
# benchmarks/ncu_compare.py). Carry [".device/lib"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
SECTIONS=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
  --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables
  --section ComputeWorkloadAnalysis)
for run in "fk 1" "fk 0" "cudnn 1"; do
  set -- $run
  tag=${1}_d128_s8192_c$2
  timeout -k 5 90 ncu --clock-control none --nvtx --nvtx-include "prof/" -c 3 "${SECTIONS[@]}" \
    --csv --page details python3 benchmarks/ab/attn_ncu_one.py --lib "$LIB" --which $1 \
    --d 128 --s 8192 --causal $2 > "$OUT/ncu_$tag.csv" 2>&1
  echo "$tag: rc $?, $(grep -c '^"' "$OUT/ncu_$tag.csv") rows, kernel: $(grep -m1 -o '"[^"]*(' "$OUT/ncu_$tag.csv" | cut -c1-90) (${SECONDS} s)"
done
