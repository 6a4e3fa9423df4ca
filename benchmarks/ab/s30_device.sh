#!/usr/bin/env bash
# Session 30, one call (carry .device without model/python/cpu tests, and .device-b = a829eba's
# library): the streamed sm90 direct kernel with the fence before the n64 diagonal steps, the
# epilogue on per-thread base addresses and a producer warpgroup that gives its registers to the
# consumers (setmaxnreg 64 / 104).
#   1. flashkit_tests_gpu "[stream]", "[direct]" (sm90 and sm80 direct cases), the non-finite
#      case; memcheck and racecheck on the sm90 small case.
#   2. benchmarks/fftconv.py A B B A (A = .device-b, B = .device), L 256 / 512 / 1K.
#   3. PROF=1: per-instruction profile of B at L 1K (ncu), regions and top instructions.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
for t in "[stream]" "sm80 fftconv_direct: non-finite inputs spread to the whole row" ${DIRECT:+"[direct]"}; do
  timeout -k 10 200 "$bin" "$t" > "$OUT/t.log" 2>&1
  echo "$t: $(grep -E '^(All tests passed|test cases:)' "$OUT/t.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$OUT/t.log" | head -60
done
for tool in ${TOOLS:-memcheck racecheck}; do
  timeout -k 10 150 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm90 fftconv_direct: small case for memcheck" > "$OUT/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1) (${SECONDS} s)"
  grep -m5 -A6 "Invalid\|Hazard" "$OUT/$tool.log" | head -30
done
unset LD_LIBRARY_PATH
side() {  # SIDE ROUND
  local lib=.device/lib/libflashkit.so
  [ "$1" = A ] && lib=.device-b/lib/libflashkit.so
  echo "== $1 ($lib)"
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 120 \
    python3 benchmarks/fftconv.py --lib "$lib" --reps 10 --seqlens ${SEQLENS:-256 512 1024} \
    --json "$OUT/ab_$1$2.json" 2>&1 | grep -v '^json' | grep -v True
  echo "(${SECONDS} s)"
}
r=0
for s in ${ORDER:-A B B A}; do r=$((r + 1)); side $s $r; done
if [ "${PROF:-1}" = 1 ]; then
  export LD_LIBRARY_PATH=$PWD/.device/lib
  LIB=$PWD/.device/lib/libflashkit.so
  sass_profile s30 stream90 2 python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024
  python3 benchmarks/ncu_sass.py "$OUT/sass_s30.csv" --regions 2>&1 | head -40
  python3 benchmarks/ncu_sass.py "$OUT/sass_s30.csv" --top 40 2>&1 | head -60
fi
