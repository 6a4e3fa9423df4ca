#!/usr/bin/env bash
# Session 33, fft_size 64K in cuda.sm80.fftconv_reg (two 32K-point passes): the GPU tests of
# the FFT convolution's sm80 family (the new [k64] case among them), memcheck on the small
# cases, then benchmarks/fftconv.py at L 32K (fft_size 64K) with the new kernel (R) and with
# FLASHKIT_FFTCONV_REG=0 (G: cuda.generic.fftconv, what served these calls before), order G R
# R G, gated rows kept; L 16K (the fft_size-32K kernel) in the R rounds as a control.
# run(command="bash benchmarks/ab/k64_device.sh", carry=[".device"])
cd "$(dirname "$0")/../.."
source benchmarks/ab/stage.sh
dev_stage
BIN=.device/bin/flashkit_tests_gpu
gpu_case $BIN "[k64]"
gpu_case $BIN "sm80 fftconv: the predicate declines*" "predicate"
sanitize_case $BIN memcheck "sm80 fftconv_reg: small case for memcheck"
gpu_case $BIN "[fftconv][sm80]~[direct]~[sm80-only]~[k64]" "fftconv sm80 family"
export GATED=1
FLASHKIT_FFTCONV_REG=0 fftconv_side B G1 "32768"
fftconv_side B R1 "16384 32768"
fftconv_side B R2 "16384 32768"
FLASHKIT_FFTCONV_REG=0 fftconv_side B G2 "32768"
