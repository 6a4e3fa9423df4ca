#!/usr/bin/env bash
# Issue 7's whole benchmark grid on one library, and Nsight Compute counters for each cell that
# misses its target, flashkit's kernel and cuBLAS's on the same shape. One device call:
#   1. benchmarks/gemm.py: bf16 and fp16 on the seven shapes, the fused bias + GELU rows, and fp8
#      against torch._scaled_mm (--fp8); then the sm80-class kernel forced (--family sm80),
#      bf16 and fp16. JSON under $OUT.
#   2. ncu, one launch each, flashkit then torch.matmul (gemm.py --profile / --profile-anchor,
#      inside a cudaProfilerStart/Stop range): SpeedOfLight, ComputeWorkloadAnalysis,
#      MemoryWorkloadAnalysis, LaunchStats, Occupancy and WarpStateStats, plus the Hopper
#      tensor-pipe and stall metrics that `ncu --query-metrics --chip gh100` lists. One CSV per
#      (shape, side), all in $OUT/ncu.tar.gz, read here with benchmarks/ncu_compare.py.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model
# then  run(command="bash benchmarks/ab/gemm_grid_device.sh", carry=[".device"]).
# About 350 s: part 1 ~200 s, part 2 ~15 s a profile. Each step has its own time limit, and
# part 2 stops starting profiles after 540 s.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage name,driver_version,clocks.max.sm,power.limit
echo "== 1. the grid (flashkit auto dispatch): bf16, fp16, fused, fp8"
timeout -k 5 200 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 fp16 --fp8 --reps 20 \
  --warmup 5 --json "$OUT/grid_auto.json" 2>&1 | grep -vE "^\s*$" | cut -c1-160
echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
echo "== 1b. the sm80-class kernel forced: bf16, fp16"
timeout -k 5 150 python3 benchmarks/gemm.py --lib "$LIB" --family sm80 --dtype bf16 fp16 \
  --reps 10 --warmup 3 --json "$OUT/grid_sm80.json" 2>&1 | grep -vE "^\s*$" | cut -c1-160
echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"

echo "== 2. counters: flashkit and cuBLAS per shape"
avail=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
extra=()
for m in sm__pipe_tensor_op_gmma_cycles_active sm__pipe_tensor_op_hmma_cycles_active \
         sm__inst_executed_pipe_tensor_op_gmma; do
  if grep -qx "$m" <<<"$avail"; then
    case $m in *cycles_active) extra+=("$m.avg.pct_of_peak_sustained_active");; *) extra+=("$m.sum");; esac
  fi
done
echo "extra metrics: ${extra[*]:-none}"
NCU=(ncu --clock-control none --profile-from-start off -s 2 -c 1 --csv --page details
     --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
     --section LaunchStats --section Occupancy --section WarpStateStats)
[ ${#extra[@]} -gt 0 ] && NCU+=(--metrics "$(IFS=,; echo "${extra[*]}")")
NDIR=/tmp/fk-ncu  # the CSVs travel back as one archive (a call returns at most 8 files)
rm -rf "$NDIR" && mkdir -p "$NDIR"
for shape in "4096 4096 4096" "8192 8192 1024" "16 8192 8192" "128 8192 8192" "4096 12288 4096"; do
  tag=${shape// /x}
  gemm_ncu 540 "fk_$tag" --profile $shape
  gemm_ncu 540 "cublas_$tag" --profile $shape --profile-anchor
done
tar czf "$OUT/ncu.tar.gz" -C "$NDIR" .
ls -la "$OUT"
