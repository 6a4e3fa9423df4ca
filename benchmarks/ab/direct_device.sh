#!/usr/bin/env bash
# Session 26: cuda.sm80.fftconv_direct (the Toeplitz product for short rows) as merged. One call,
# carry .device (scripts/gpu-check.sh --build-only, then rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu "[fftconv]" (every FFT-convolution case, the direct ones among them);
#      memcheck on "[direct][memcheck]".
#   2. benchmarks/fftconv.py (bf16, H 768, causal, D, gated and not; the AUTO choice against the
#      FFT kernel (FLASHKIT_FFTCONV_DIRECT=0, same process) and torch.fft) at L 256..2048 with
#      B 64 (B 32 at 2048); L 1024 at B 24 (the window's edge); fp16 at L 1024, B 64.
# Everything in $OUT/direct.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-direct
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 240 "$bin" "[fftconv]" > "$W/t_fftconv.log" 2>&1
echo "[fftconv]: $(grep -E '^(All tests passed|test cases:)' "$W/t_fftconv.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A16 FAILED "$W/t_fftconv.log" | head -60
grep -A2 'max |err|' "$W/t_fftconv.log" | head -12
timeout -k 10 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" "[direct][memcheck]" \
  > "$W/memcheck.log" 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tail -n1) (${SECONDS} s)"
bench() {  # NAME ARGS...
  local name=$1
  shift
  timeout -k 5 150 python3 benchmarks/fftconv.py --lib "$LIB" --reps 10 --json "$W/$name.json" "$@" \
    2>&1 | tee "$W/$name.log" | grep -v -e '^json'
  echo "($name: ${SECONDS} s)"
}
bench b64 --seqlens 256 512 1024 2048
bench b24 --seqlens 1024 --batch 24
bench fp16 --seqlens 1024 --dtype fp16
tar czf "$OUT/direct.tar.gz" -C "$W" .
