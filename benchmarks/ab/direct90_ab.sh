#!/usr/bin/env bash
# Session 27: cuda.sm90.fftconv_direct's epilogue through shared memory (B, .device) against the
# per-pair register epilogue (A, .device-b/lib.so.gz). One call, carry .device and .device-b:
#   1. flashkit_tests_gpu "[direct]" on B; memcheck and racecheck on the sm90 small case.
#   2. benchmarks/fftconv.py, bf16, H 768, causal, D, gated and not, L 512 and 1024 at B 64, in
#      the order A B B A (the sm80-class direct kernel and the FFT kernel are timed in each run,
#      same process: columns "sm80 ms" and "fft ms").
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
W=/tmp/fk-d90ab
mkdir -p "$W"
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 120 "$bin" "[direct]" > "$W/t_direct.log" 2>&1
echo "[direct]: $(grep -E '^(All tests passed|test cases:)' "$W/t_direct.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A20 FAILED "$W/t_direct.log" | head -60
for tool in memcheck racecheck; do
  timeout -k 10 90 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm90 fftconv_direct: small case for memcheck" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
run_side() {  # SIDE ROUND LIB
  LD_LIBRARY_PATH=$(dirname "$3") timeout -k 5 120 python3 benchmarks/fftconv.py --lib "$3" \
    --reps 10 --seqlens 256 512 1024 --json "$W/$1$2.json" 2>&1 | grep -v -e '^json'
}
ab_rounds run_side
echo "(${SECONDS} s)"
tar czf "$OUT/d90ab.tar.gz" -C "$W" .
