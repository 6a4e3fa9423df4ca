#!/usr/bin/env bash
# Session 48: Nsight Compute of the issue-8 cells that had no current profile: the FFT
# convolution at L 256 / 512 / 4K / 8K (bf16, B 64 (fewer at long L), H 768, causal, D, not
# gated, constant plan: every kernel of one call) and the fused Monarch kernel at n 4096, 64
# blocks, 16384 tokens (one launch after the correctness call). Sections: speed of light, launch,
# occupancy, memory, warp states, scheduler, instruction statistics. Carry .device, or
# [".device/lib"] (all it reads).
# Read here with: python3 benchmarks/ncu_compare.py / benchmarks/ncu_sass.py, or the CSV itself.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section InstructionStats"
timeout -k 5 120 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens ${FFT_L:-256 512 1024 4096 8192} \
  --gated no --reps 20 2>&1 | grep -vE "^\s*$" | cut -c1-220 | tail -8
for L in ${FFT_NCU_L:-256 512 4096 8192}; do
  timeout -k 5 90 ncu --clock-control none --nvtx --nvtx-include "prof/" -c 6 $SECS --csv --page details \
    python3 benchmarks/ab/fft_ncu_one.py --lib "$LIB" --L $L > "$OUT/ncu_fft_L$L.csv" 2>&1
  echo "ncu fft L $L: rc $? (${SECONDS} s)"
done
timeout -k 5 60 python3 benchmarks/monarch.py --lib "$LIB" --quick --tokens 16384 --n 4096 --no-dense 2>&1 | tail -4
timeout -k 5 90 ncu --clock-control none -k regex:monarch_cluster -s 1 -c 1 $SECS --csv --page details \
  python3 benchmarks/monarch.py --lib "$LIB" --quick --tokens 16384 --n 4096 --no-dense --warmup 1 --reps 1 \
  > "$OUT/ncu_monarch_n4096.csv" 2>&1
echo "ncu monarch: rc $? (${SECONDS} s)"
cd "$OUT" && tar czf ncu_s48.tar.gz ncu_*.csv && rm -f ncu_*.csv
