#!/usr/bin/env bash
# Session 27: where cuda.sm90.fftconv_direct's time goes at B 64, H 768, L 1K (bf16, causal, D,
# not gated). One call, carry .device: ncu throughput metrics of one launch, then the
# per-instruction profile (sass_profile), then memcheck on the sm90 small case. Files in $OUT.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bench=(python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024)
timeout -k 10 120 ncu --clock-control none -k regex:direct90 -s 2 -c 1 --metrics \
gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio \
  "${bench[@]}" > "$OUT/metrics.txt" 2>&1
echo "metrics rc $? (${SECONDS} s)"
grep -E "gpu__time|gmma|dram__|sm__throughput|wavefronts|inst_executed|warps_active|stalled" "$OUT/metrics.txt" | head -20
sass_profile d90 direct90 2 "${bench[@]}"
python3 benchmarks/ncu_sass.py "$OUT/sass_d90.csv" --regions 2>&1 | head -60
timeout -k 10 90 compute-sanitizer --tool memcheck --error-exitcode 9 .device/bin/flashkit_tests_gpu \
  "sm90 fftconv_direct: small case for memcheck" > "$OUT/memcheck.log" 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -n1) (${SECONDS} s)"
