#!/usr/bin/env bash
# Session 38 (for the next session): where the gated streamed cuda.sm90.fftconv_direct's time
# goes at B 64, H 768, L 1K (bf16, causal, D, pregate and postgate; 0.197 ms, 49% of the HBM
# floor). One call, carry .device: ncu throughput metrics of one launch, then the
# per-instruction profile (sass_profile; read the regions: pregate multiply, product walk,
# postgate waits, epilogue). Files in $OUT.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bench=(python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --gated yes --seqlens ${PROF_L:-1024})
timeout -k 10 120 ncu --clock-control none -k regex:stream90 -s 2 -c 1 --metrics \
gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,smsp__inst_executed.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg \
  "${bench[@]}" > "$OUT/metrics.txt" 2>&1
echo "metrics rc $? (${SECONDS} s)"
grep -E "gpu__time|gmma|dram__|sm__throughput|hit_rate|inst_executed|warps_active|cycles_active" "$OUT/metrics.txt" | head -20
sass_profile g90 stream90 2 "${bench[@]}"
python3 benchmarks/ncu_sass.py "$OUT/sass_g90.csv" --regions 2>&1 | head -40
python3 benchmarks/ncu_sass.py "$OUT/sass_g90.csv" --top 40 2>&1 | head -60
