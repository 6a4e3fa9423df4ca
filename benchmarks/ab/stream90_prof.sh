#!/usr/bin/env bash
# Session 28: where the streamed cuda.sm90.fftconv_direct's time goes at B 64, H 768, L 1K (bf16,
# causal, D, not gated; PROF_GATED=yes: the gated calls, pregate and postgate, session 38). One
# call, carry .device: ncu throughput metrics of one launch (with the L1 / L2 hit rates), then
# the per-instruction profile (sass_profile; with gates, read the pregate multiply, the product
# walk, the postgate waits and the epilogue). Files in $OUT.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bench=(python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --gated "${PROF_GATED:-no}"
  --seqlens ${PROF_L:-1024})
timeout -k 10 120 ncu --clock-control none -k regex:stream90 -s 2 -c 1 --metrics \
gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,\
l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,\
lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct \
  "${bench[@]}" > "$OUT/metrics.txt" 2>&1
echo "metrics rc $? (${SECONDS} s)"
grep -E "gpu__time|gmma|dram__|sm__throughput|wavefronts|bank_|inst_executed|warps_active|cycles_active|hit_rate" "$OUT/metrics.txt" | head -24
sass_profile s90 stream90 2 "${bench[@]}"
python3 benchmarks/ncu_sass.py "$OUT/sass_s90.csv" --regions 2>&1 | head -40
python3 benchmarks/ncu_sass.py "$OUT/sass_s90.csv" --top 40 2>&1 | head -60
