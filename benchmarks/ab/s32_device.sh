#!/usr/bin/env bash
# Session 32 (carry .device without model/python/cpu tests, and .device-b = main 5090edd's
# library, whose fftconv_reg.cu is main's): the fft_size 16K / 32K FFT convolution
# (conv_reg_big_kernel) with its row accesses as predicated loads and stores (B). The
# fftconv_reg tests, memcheck and racecheck of its small case on B, then benchmarks/fftconv.py
# A B B A at L 4K / 8K / 16K (A = .device-b, gated rows printed too), then PROF=1: a
# per-instruction profile of B's kernel at L 16K. The session's later steps (the tables, the
# 8K kernel) ran the same script.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
gpu_case "$bin" "[fftconv][sm80]~[direct]~[sm80-only]"
for tool in memcheck racecheck; do
  sanitize_case "$bin" $tool "sm80 fftconv_reg: small case for memcheck"
done
unset LD_LIBRARY_PATH
GATED=1 fftconv_ab "${SEQLENS:-4096 8192 16384}"
if [ "${PROF:-1}" = 1 ]; then
  LIB=$PWD/.device/lib/libflashkit.so
  LD_LIBRARY_PATH=$PWD/.device/lib sass_profile s32 conv_reg_big_kernel 2 python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 16384
  python3 benchmarks/ncu_sass.py "$OUT/sass_s32.csv" --regions 2>&1 | head -45
  python3 benchmarks/ncu_sass.py "$OUT/sass_s32.csv" --top 30 2>&1 | head -45
  cp "$OUT/sass_s32.csv" "$OUT/keep_sass_s32.csv" 2>/dev/null
fi
