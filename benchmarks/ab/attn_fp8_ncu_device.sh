#!/usr/bin/env bash
# Session 41: where the fp8 attention kernel's time goes, against the bf16 kernel on the same
# cell (head_dim 128, 8192 keys, not causal): Nsight Compute's pipe utilisation (tensor, MUFU =
# xu, FMA, ALU), issue activity and warp stall reasons of each attention kernel launch in the
# NVTX range "prof" (benchmarks/ab/attn_fp8_ncu_one.py). Carry .device (scripts/gpu-check.sh
# --build-only).
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.device/lib
for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
OUT=${OUT:-/tmp/fk-out}
mkdir -p "$OUT"
for which in fp8 bf16; do
  timeout -k 5 150 ncu --clock-control none --nvtx --nvtx-include "prof/" -k regex:attention_sm90 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section InstructionStats --page raw \
    python3 benchmarks/ab/attn_fp8_ncu_one.py --lib .device/lib --which $which > "$OUT/ncu_fp8_$which.txt" 2>&1
  echo "== $which: rc $?"
  grep -E 'gpu__time_duration.sum|sm__inst_executed.sum |pipe_(tensor|xu|fma|alu|fp16)[a-z_]*\.(avg|sum)\.pct|issue_active.avg.pct|warp_issue_stalled_[a-z_]+_per_warp_active.pct|Function Name|attention_sm90' "$OUT/ncu_fp8_$which.txt" \
    | awk '{ if ($NF+0 > 0.5 || $0 ~ /duration|inst_executed|Function|attention/) print }' | cut -c1-150 | head -60
done
