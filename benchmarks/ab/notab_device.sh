#!/usr/bin/env bash
# Session 33, third call: the fft_size-8K / 16K builds without the shared-memory tables (what
# GPUs with 99 KB per block run; FLASHKIT_FFTCONV_REG_TABLES=0 forces them here) and the 64K
# review fixes. Tests: [notab], [k64] (300 channels, the decline above 2048 channels), the
# workspace-size case (a bf16 fft_size-64K plan added), memcheck on [notab], the sm80 family's
# FFT cases. Then benchmarks/fftconv.py at L 4K (fft_size 8K, B 16) and 8K (16K, B 8): T =
# tables (default), N = FLASHKIT_FFTCONV_REG_TABLES=0, O = FLASHKIT_FFTCONV_REG=0 (the older
# cuda.sm80.fftconv, which 99 KB GPUs ran at these sizes since session 32); order T N N T O.
# run(command="bash benchmarks/ab/notab_device.sh", carry=[".device"])
cd "$(dirname "$0")/../.."
source benchmarks/ab/stage.sh
dev_stage
BIN=.device/bin/flashkit_tests_gpu
gpu_case $BIN "[notab]"
gpu_case $BIN "[k64]"
gpu_case $BIN "gpu workspace size queries*" "workspace sizes"
sanitize_case $BIN memcheck "[notab]"
gpu_case $BIN "[fftconv][sm80]~[direct]~[sm80-only]~[k64]~[notab]" "fftconv sm80 family"
export GATED=1
fftconv_side T 1 "4096 8192"
FLASHKIT_FFTCONV_REG_TABLES=0 fftconv_side N 1 "4096 8192"
FLASHKIT_FFTCONV_REG_TABLES=0 fftconv_side N 2 "4096 8192"
fftconv_side T 2 "4096 8192"
FLASHKIT_FFTCONV_REG=0 fftconv_side O 1 "4096 8192"
