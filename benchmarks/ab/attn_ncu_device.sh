#!/usr/bin/env bash
# Session 34: Nsight Compute on the Hopper attention kernel against cuDNN 9.19's kernel on the
# same cells (never compared before; RESULTS has flashkit-only profiles), at the cells furthest
# below cuDNN (head_dim 128 non-causal 512 keys 0.87x, head_dim 64 causal 512 0.79x, head_dim
# 256 causal 512 0.79x) and one near it (head_dim 128 non-causal 4096, 0.98x). Per cell and side
# one --page details CSV (launch, occupancy, speed of light, memory tables, warp states,
# scheduler, instructions) of every launch (up to 4) in the NVTX range "prof" (one call)
# (benchmarks/ab/attn_ncu_one.py). CSVs in $OUT; read with benchmarks/ncu_compare.py.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python; carry .device.
# ATTN_NCU_CELLS="d s causal; ..." picks other cells (session 48: long cells), ATTN_NCU_SEQLENS
# the timing step's seqlens.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
SECTIONS=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
  --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis
  --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis)
echo "== timing (no profiler)"
timeout -k 5 90 python3 benchmarks/attention.py --lib "$LIB" --family sm90 --head-dims 64,128,256 \
  --seqlens ${ATTN_NCU_SEQLENS:-512,4096} --no-extra --reps 10 2>&1 | grep -vE "^\s*$" | cut -c1-150 | tail -14
IFS=';' read -r -a cells <<< "${ATTN_NCU_CELLS:-128 512 0;64 512 1;256 512 1;128 4096 0}"
for cell in "${cells[@]}"; do
  set -- $cell
  for which in fk cudnn; do
    tag=${which}_d$1_s$2_c$3
    timeout -k 5 100 ncu --clock-control none --nvtx --nvtx-include "prof/" -c 4 "${SECTIONS[@]}" \
      --csv --page details python3 benchmarks/ab/attn_ncu_one.py --lib "$LIB" --which $which \
      --d $1 --s $2 --causal $3 > "$OUT/ncu_$tag.csv" 2>&1
    echo "$tag: rc $?, $(grep -c '^"' "$OUT/ncu_$tag.csv") rows, kernel: $(grep -m1 -o '"[^"]*(' "$OUT/ncu_$tag.csv" | cut -c1-90) (${SECONDS} s)"
  done
done
