#!/usr/bin/env bash
# Session 29: A = .device-b's library (main as it was), B and C = .device's with
# FLASHKIT_FFTCONV_DIRECT90_OPT=$OPT_B (default 3) and $OPT_C (default 7);
# benchmarks/fftconv.py at L 256 / 512 / 1024 (bf16, B 64, H 768, causal, D, not gated), order
# A B C C B A (ORDER). Session 29's later calls: OPT ignored, .device-b a829eba, .device the
# next change. Before that (TEST=1) "[stream]", the non-finite case and memcheck of the small
# case with OPT_C; after it (PROF=1) the per-instruction profile of C at L 1K. Files in $OUT.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
bin=.device/bin/flashkit_tests_gpu
if [ "${TEST:-1}" = 1 ]; then
  export LD_LIBRARY_PATH=$PWD/.device/lib
  for t in "[stream]" "sm80 fftconv_direct: non-finite inputs spread to the whole row"; do
    FLASHKIT_FFTCONV_DIRECT90_OPT=${OPT_C:-7} timeout -k 10 150 "$bin" "$t" > "$OUT/t.log" 2>&1
    echo "OPT=${OPT_C:-7} $t: $(grep -E '^(All tests passed|test cases:)' "$OUT/t.log" | tail -n1) (${SECONDS} s)"
    grep -B6 -A24 FAILED "$OUT/t.log" | head -60
  done
  for tool in ${TOOLS:-memcheck}; do
    FLASHKIT_FFTCONV_DIRECT90_OPT=${OPT_C:-7} timeout -k 10 120 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
      "sm90 fftconv_direct: small case for memcheck" > "$OUT/$tool.log" 2>&1
    echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -n1) (${SECONDS} s)"
    grep -m5 -A6 "Invalid\|Hazard" "$OUT/$tool.log" | head -30
  done
  unset LD_LIBRARY_PATH
fi
side() {  # SIDE
  local lib=.device/lib/libflashkit.so opt=${OPT_B:-3}
  [ "$1" = A ] && lib=.device-b/lib/libflashkit.so
  [ "$1" = C ] && opt=${OPT_C:-7}
  echo "== $1 (OPT=$opt, $lib)"
  FLASHKIT_FFTCONV_DIRECT90_OPT=$opt LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 120 \
    python3 benchmarks/fftconv.py --lib "$lib" --reps 10 --seqlens ${SEQLENS:-256 512 1024} \
    --json "$OUT/ab_$1$2.json" 2>&1 | grep -v '^json' | grep -v True
  echo "(${SECONDS} s)"
}
r=0
for s in ${ORDER:-A B C C B A}; do r=$((r + 1)); side $s $r; done
if [ "${PROF:-1}" = 1 ]; then
  export LD_LIBRARY_PATH=$PWD/.device/lib
  LIB=$PWD/.device/lib/libflashkit.so
  FLASHKIT_FFTCONV_DIRECT90_OPT=${OPT_C:-7} sass_profile s29 stream90 2 python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024
  python3 benchmarks/ncu_sass.py "$OUT/sass_s29.csv" --regions 2>&1 | head -40
  python3 benchmarks/ncu_sass.py "$OUT/sass_s29.csv" --top 40 2>&1 | head -60
fi
