#!/usr/bin/env bash
# Session 33, after the spectrum kernels' shared helpers (real_pair, frag_k, pow2_at_least): the
# FFT convolution's sm80-family cases, whose plain plans run spectrum_fast_kernel (fft_size
# 1K-32K) and spectrum_fast64_kernel (64K) on every call.
# run(command="bash benchmarks/ab/specref_device.sh", carry=[".device"])
cd "$(dirname "$0")/../.."
source benchmarks/ab/stage.sh
dev_stage
BIN=.device/bin/flashkit_tests_gpu
gpu_case $BIN "[fftconv][sm80]~[direct]~[sm80-only]" "fftconv sm80 family"
sanitize_case $BIN racecheck "sm80 fftconv_reg: small case for memcheck"
