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
for t in "[stream]" "sm80 fftconv_direct: non-finite inputs spread to the whole row"; do
  timeout -k 10 200 "$bin" "$t" > "$OUT/t.log" 2>&1
  echo "$t: $(grep -E '^(All tests passed|test cases:)' "$OUT/t.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$OUT/t.log" | head -60
done
for tool in memcheck racecheck; do
  timeout -k 10 150 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm90 fftconv_direct: small case for memcheck" > "$OUT/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1) (${SECONDS} s)"
  grep -m5 -A6 "Invalid\|Hazard" "$OUT/$tool.log" | head -30
done
unset LD_LIBRARY_PATH
for s in ${ORDER:-A B B A}; do
  lib=.device/lib/libflashkit.so
  [ "$s" = A ] && lib=.device-b/lib/libflashkit.so
  echo "== $s ($lib)"
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 120 python3 benchmarks/fftconv.py --lib "$lib" \
    --reps 10 --seqlens 256 512 1024 2>&1 | grep -E '^(dtype|bf16 .*False)'
done
