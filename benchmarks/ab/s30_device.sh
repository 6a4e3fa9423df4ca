#!/usr/bin/env bash
# Session 30, one call (carry .device without model/python/cpu tests, and .device-b = a829eba's
# library): the streamed sm90 direct kernel with the fence before the n64 diagonal steps, the
# epilogue on per-thread base addresses, and two launch shapes: wide (L > 512: a producer
# warpgroup, tables and loads on two warps, setmaxnreg 64 / 104) and narrow (one producer warp,
# 112 registers, two CTAs per SM). The first call of the session ran an experiment switch
# (FLASHKIT_FFTCONV_DIRECT90_SPLIT, since removed: SPLIT=1 is the wide form).
#   1. flashkit_tests_gpu "[stream]", "[direct]" (sm90 and sm80 direct cases), the non-finite
#      case; memcheck and racecheck on the sm90 small case.
#      With SPLIT=1 also "[stream]" and both sanitizers with FLASHKIT_FFTCONV_DIRECT90_SPLIT=1.
#   2. benchmarks/fftconv.py A B C C B A (A = .device-b, B = .device, C = .device with
#      FLASHKIT_FFTCONV_DIRECT90_SPLIT=1: tables and loads on two producer warps), L 256-1K.
#   3. PROF=1: per-instruction profile of B at L 1K (ncu), regions and top instructions.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
stream_cases "$bin" "" ${DIRECT:+"[direct]"}
[ "${SPLIT:-1}" = 1 ] && FLASHKIT_FFTCONV_DIRECT90_SPLIT=1 gpu_case "$bin" "[stream]" "SPLIT=1 [stream]"
for tool in ${TOOLS:-memcheck racecheck}; do
  for sp in 0 ${SPLIT:-1}; do
    FLASHKIT_FFTCONV_DIRECT90_SPLIT=$sp sanitize_case "$bin" $tool \
      "sm90 fftconv_direct: small case for memcheck" "SPLIT=$sp"
  done
done
unset LD_LIBRARY_PATH
r=0
for s in ${ORDER:-A B C C B A}; do
  r=$((r + 1))
  sp=0
  [ "$s" = C ] && sp=1
  FLASHKIT_FFTCONV_DIRECT90_SPLIT=$sp fftconv_side "$s" $r "${SEQLENS:-256 512 1024}"
done
if [ "${PROF:-1}" = 1 ]; then
  export LD_LIBRARY_PATH=$PWD/.device/lib
  LIB=$PWD/.device/lib/libflashkit.so
  sass_profile s30 stream90 2 python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024
  python3 benchmarks/ncu_sass.py "$OUT/sass_s30.csv" --regions 2>&1 | head -40
  python3 benchmarks/ncu_sass.py "$OUT/sass_s30.csv" --top 40 2>&1 | head -60
fi
