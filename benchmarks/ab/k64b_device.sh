#!/usr/bin/env bash
# Session 33, second call: spectrum_fast64_kernel (the fft_size-64K filter spectrum in two
# 16K-point halves). The [k64] case (plain plans run it per call), the radix-2 spectrum case
# (now with fft_size 64K), memcheck and racecheck on the small cases, the sm80 family's FFT
# cases, then benchmarks/fftconv.py at L 16K (control) and 32K, gated rows kept, two runs.
# run(command="bash benchmarks/ab/k64b_device.sh", carry=[".device"])
cd "$(dirname "$0")/../.."
source benchmarks/ab/stage.sh
dev_stage
BIN=.device/bin/flashkit_tests_gpu
gpu_case $BIN "[k64]"
gpu_case $BIN "sm80 fftconv_reg: filter spectrum by the radix-2 kernel" "radix-2 spectrum"
sanitize_case $BIN memcheck "sm80 fftconv_reg: small case for memcheck"
sanitize_case $BIN racecheck "sm80 fftconv_reg: small case for memcheck"
gpu_case $BIN "[fftconv][sm80]~[direct]~[sm80-only]~[k64]" "fftconv sm80 family"
export GATED=1
fftconv_side B R1 "16384 32768"
fftconv_side B R2 "16384 32768"
