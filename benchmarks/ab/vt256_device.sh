#!/usr/bin/env bash
# Session 44: the fp8 attention kernel at head_dim 256 with the V^T pass before the kernel
# (FLASHKIT_SM90_FP8_VT=0) against V transposed in shared memory by the producer warpgroup's
# warps 1-3 (=2), one library (carry .device, scripts/gpu-check.sh --build-only):
#   1. `[fp8]` with the default rule (the first run used seqlen_k <= 1024; merged: query rows
#      per key, attention_sm90.cpp fp8_vt_in_kernel), =0 and =2;
#   2. benchmarks/attention_fp8.py --head-dim 256 (8 heads, batch x seqlen = 16384), order
#      0 2 2 0, one process per run (SEQLENS, REPS);
#   3. (PROF=1, default) Nsight Compute at 8192 keys, not causal, both forms: speed of light,
#      warp states, scheduler and instruction statistics of the attention kernel, then its
#      per-SASS stall samples ($OUT/sass_vt*.csv.gz, read with benchmarks/ncu_sass.py).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
T=.device/bin/flashkit_tests_gpu
for m in 1 0 2; do
  echo "== [fp8], FLASHKIT_SM90_FP8_VT=$m"
  FLASHKIT_SM90_FP8_VT=$m timeout -k 5 240 "$T" "[fp8]" 2>&1 | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 30
done
echo "(${SECONDS} s)"
SEQLENS=${SEQLENS:-512 1024 1536 2048 4096}
i=0
for m in 0 2 2 0; do
  i=$((i + 1))
  echo "== run $i, FLASHKIT_SM90_FP8_VT=$m"
  FLASHKIT_SM90_FP8_VT=$m timeout -k 5 120 python3 benchmarks/attention_fp8.py --lib .device/lib \
    --head-dim 256 --seqlens $SEQLENS --reps "${REPS:-10}" --json "$OUT/vt${m}_run$i.json"
done
echo "(${SECONDS} s)"
[ "${PROF:-1}" = 1 ] || exit 0
for m in 0 2; do
  one="python3 benchmarks/ab/attn_fp8_ncu_one.py --lib .device/lib --which fp8 --head-dim 256 --s 8192"
  FLASHKIT_SM90_FP8_VT=$m timeout -k 5 120 ncu --clock-control none --nvtx --nvtx-include "prof/" \
    -k regex:attention_sm90 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section MemoryWorkloadAnalysis --page raw $one > "$OUT/ncu_vt$m.txt" 2>&1
  echo "== ncu FP8_VT=$m: rc $? (${SECONDS} s)"
  grep -E 'gpu__time_duration.sum|sm__inst_executed.sum |pipe_tensor[a-z_]*\.(avg|sum)\.pct|issue_active.avg.pct|smsp__warps_active.avg.per_cycle_active|l1tex__data_pipe_lsu_wavefronts_mem_shared.sum |l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum |dram__throughput.avg.pct|warp_issue_stalled_[a-z_]+_per_warp_active.pct' "$OUT/ncu_vt$m.txt" \
    | awk '{ if ($NF+0 > 0.5 || $0 ~ /duration|inst_executed|wavefronts|conflicts/) print }' | cut -c1-150 | head -40
  FLASHKIT_SM90_FP8_VT=$m SASS_LIMIT=150 sass_profile "vt$m" attention_sm90_kernel 2 $one
done
cd "$OUT" && gzip -9f sass_*.csv ncu_vt*.txt 2>/dev/null; ls -la "$OUT" | tail -n 12
