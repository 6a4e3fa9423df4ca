#!/usr/bin/env bash
# Session 33, last call: the [k64] and [notab] cases after their tables were merged into one
# BigRow list (same rows and seeds), and the sm80 family's FFT cases, on main 12365d5's build.
# run(command="bash benchmarks/ab/k64c_device.sh", carry=[".device"])
cd "$(dirname "$0")/../.."
source benchmarks/ab/stage.sh
dev_stage
BIN=.device/bin/flashkit_tests_gpu
gpu_case $BIN "[k64]"
gpu_case $BIN "[notab]"
gpu_case $BIN "[fftconv][sm80]~[direct]~[sm80-only]~[k64]~[notab]" "fftconv sm80 family"
