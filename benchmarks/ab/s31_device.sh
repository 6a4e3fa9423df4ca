#!/usr/bin/env bash
# Session 31 (carry .device without model/python/cpu tests, and .device-b = main 5090edd's
# library): the streamed sm90 direct convolution with the item's taps in one memory round trip
# and the table built by three producer warps (B), and B with rows checked on the producer's
# warps 2-3 (C: FLASHKIT_FFTCONV_DIRECT90_PCHECK=1, wide form only). Tests for B and C, both
# sanitizers on the sm90 small case for C, then benchmarks/fftconv.py A B C C B A at L 256 /
# 512 / 1K (A = .device-b), then PROF=1: per-instruction profile of ${PROF_SIDE:-C} at L 1K.
# Historical: ran on babfd2b; the PCHECK switch (side C) was removed after it measured equal to B.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
for pc in 0 1; do
  export FLASHKIT_FFTCONV_DIRECT90_PCHECK=$pc
  stream_cases "$bin" "PCHECK=$pc "
done
export FLASHKIT_FFTCONV_DIRECT90_PCHECK=1
for tool in memcheck racecheck; do
  sanitize_case "$bin" $tool "sm90 fftconv_direct: small case for memcheck" "PCHECK=1"
done
unset LD_LIBRARY_PATH
r=0
for s in ${ORDER:-A B C C B A}; do
  r=$((r + 1))
  if [ "$s" = C ]; then
    FLASHKIT_FFTCONV_DIRECT90_PCHECK=1 fftconv_side C $r
  else
    FLASHKIT_FFTCONV_DIRECT90_PCHECK=0 fftconv_side "$s" $r
  fi
done
if [ "${PROF:-1}" = 1 ]; then
  LIB=$PWD/.device/lib/libflashkit.so
  [ "${PROF_SIDE:-C}" = C ] && export FLASHKIT_FFTCONV_DIRECT90_PCHECK=1
  LD_LIBRARY_PATH=$PWD/.device/lib sass_profile s31 stream90 2 python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024
  python3 benchmarks/ncu_sass.py "$OUT/sass_s31.csv" --regions 2>&1 | head -45
  python3 benchmarks/ncu_sass.py "$OUT/sass_s31.csv" --top 30 2>&1 | head -45
  cp "$OUT/sass_s31.csv" "$OUT/keep_sass_s31.csv" 2>/dev/null
fi
