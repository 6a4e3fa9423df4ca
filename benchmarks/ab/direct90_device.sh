#!/usr/bin/env bash
# Session 27: cuda.sm90.fftconv_direct (the Toeplitz product on wgmma). One call, carry .device
# (scripts/gpu-check.sh --build-only, then rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu "[direct]" (both direct kernels: forced, AUTO's predicate, magnitudes,
#      non-finite rows), then "[fftconv]" whole; memcheck and racecheck on the sm90 small case.
#   2. benchmarks/fftconv.py (bf16, H 768, causal, D, gated and not): the AUTO choice against the
#      FFT kernel (FLASHKIT_FFTCONV_DIRECT=0) and the sm80-class direct kernel (SM80 family),
#      same process, and torch.fft: L 256..1024 at B 64, L 1024 at B 32, fp16 at L 1024.
# Everything in $OUT/direct90.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-direct90
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 120 "$bin" "[direct]" > "$W/t_direct.log" 2>&1
echo "[direct]: $(grep -E '^(All tests passed|test cases:)' "$W/t_direct.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A20 FAILED "$W/t_direct.log" | head -80
for tool in memcheck racecheck; do
  timeout -k 10 90 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm90 fftconv_direct: small case for memcheck" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
bench() {  # NAME ARGS...
  local name=$1
  shift
  timeout -k 5 150 python3 benchmarks/fftconv.py --lib "$LIB" --reps 10 --json "$W/$name.json" "$@" \
    2>&1 | tee "$W/$name.log" | grep -v -e '^json'
  echo "($name: ${SECONDS} s)"
}
bench b64 --seqlens 256 512 1024
bench b32 --seqlens 1024 --batch 32
bench fp16 --seqlens 1024 --dtype fp16
timeout -k 10 200 "$bin" "[fftconv]" > "$W/t_fftconv.log" 2>&1
echo "[fftconv]: $(grep -E '^(All tests passed|test cases:)' "$W/t_fftconv.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A16 FAILED "$W/t_fftconv.log" | head -40
grep -A2 'max |err|' "$W/t_fftconv.log" | head -16
tar czf "$OUT/direct90.tar.gz" -C "$W" .
