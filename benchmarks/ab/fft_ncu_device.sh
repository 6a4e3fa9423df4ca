#!/usr/bin/env bash
# Session 34: where a short FFT convolution's time goes (bf16, B 64, H 768, causal, D, not gated,
# constant plan; L 256 / 512 run the streamed sm90 direct kernel at 34-44% of the HBM floor):
# the timing table, then Nsight Compute (launch, occupancy, speed of light, memory) of every
# kernel of one call. Carry .device. FFT_NCU_L="256 512" (default) picks the lengths profiled,
# FFT_NCU_VARIANT_L the lengths of the variant timings at the end (empty: none).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
timeout -k 5 100 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens ${FFT_NCU_L:-256 512 1024} --reps 20 2>&1 | \
  grep -vE "^\s*$" | cut -c1-220 | tail -12
for L in ${FFT_NCU_L:-256 512}; do
  timeout -k 5 100 ncu --clock-control none --nvtx --nvtx-include "prof/" -c 6 --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats \
    --csv --page details python3 benchmarks/ab/fft_ncu_one.py --lib "$LIB" --L $L > "$OUT/ncu_fft_L$L.csv" 2>&1
  echo "L $L: rc $? (${SECONDS} s)"
  grep -v '^"' "$OUT/ncu_fft_L$L.csv" | grep -v "^==" | tail -2
done
for L in ${FFT_NCU_VARIANT_L-256 512}; do
  for v in "FLASHKIT_FFTCONV_DIRECT90_STREAM=0" "FLASHKIT_FFTCONV_DIRECT=0"; do
    env $v timeout -k 5 60 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens $L --reps 20 2>&1 | \
      grep -E "^bf16" | cut -c1-200 | sed "s/^/$v: /"
  done
done
