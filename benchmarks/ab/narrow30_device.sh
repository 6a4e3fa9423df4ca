#!/usr/bin/env bash
# Session 30, last call (carry .device without model/python/cpu tests, and .device-b = a829eba):
# the narrow launch shape back on 96 registers (one CTA per SM at 105 measured 15% slower at
# L 512). "[stream]", the non-finite case, memcheck and racecheck on the sm90 small case, then
# benchmarks/fftconv.py A B B A at L 256 / 512 / 1K (A = .device-b, B = .device).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
stream_cases "$bin" ""
for tool in memcheck racecheck; do
  sanitize_case "$bin" $tool "sm90 fftconv_direct: small case for memcheck"
done
unset LD_LIBRARY_PATH
fftconv_ab
