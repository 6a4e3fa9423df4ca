#!/usr/bin/env bash
# Session 28: the streamed form of cuda.sm90.fftconv_direct (persistent CTAs, copy-engine loads
# of the next item's rows during the current item's tensor work). One call, carry .device
# (scripts/gpu-check.sh --build-only, then rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu "[stream]" (both forms against the float64 reference), the non-finite
#      rows case, the sm90 small case under memcheck (and racecheck with STREAM_RACECHECK=1).
#   2. benchmarks/fftconv.py (bf16, B 64, H 768, causal, D, not gated), AUTO: streamed with
#      the slots walked downwards (default) and upwards (FLASHKIT_FFTCONV_DIRECT90_WALK=up;
#      STREAM_UP=0 skips it and its test pass) and not streamed
#      (FLASHKIT_FFTCONV_DIRECT90_STREAM=0; STREAM_OLD=0 skips it), in alternating processes.
#   3. flashkit_tests_gpu "[fftconv]" whole (with STREAM_FULL=1).
# Everything in $OUT/stream90.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-stream90
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
if [ "${STREAM_UP:-1}" = 1 ]; then
  FLASHKIT_FFTCONV_DIRECT90_WALK=up timeout -k 10 150 "$bin" "[stream]" > "$W/t_stream_up.log" 2>&1
  echo "[stream] walk up: $(grep -E '^(All tests passed|test cases:)' "$W/t_stream_up.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$W/t_stream_up.log" | head -60
fi
timeout -k 10 150 "$bin" "[stream]" > "$W/t_stream.log" 2>&1
echo "[stream]: $(grep -E '^(All tests passed|test cases:)' "$W/t_stream.log" | tail -n1) (${SECONDS} s)"
grep -B6 -A24 FAILED "$W/t_stream.log" | head -90
timeout -k 10 60 "$bin" "sm80 fftconv_direct: non-finite inputs spread to the whole row" > "$W/t_nan.log" 2>&1
echo "non-finite: $(grep -E '^(All tests passed|test cases:)' "$W/t_nan.log" | tail -n1) (${SECONDS} s)"
grep -B6 -A24 FAILED "$W/t_nan.log" | head -60
tools=memcheck
[ "${STREAM_RACECHECK:-0}" = 1 ] && tools="memcheck racecheck"
for tool in $tools; do
  timeout -k 10 90 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm90 fftconv_direct: small case for memcheck" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
  grep -m5 -A6 "Invalid\|Error\|Hazard" "$W/$tool.log" | head -40
done
bench() {  # NAME ARGS...
  local name=$1
  shift
  timeout -k 5 150 python3 benchmarks/fftconv.py --lib "$LIB" --reps 10 --json "$W/$name.json" "$@" \
    2>&1 | tee "$W/$name.log" | grep -v -e '^json'
  echo "($name: ${SECONDS} s)"
}
for r in 1 2; do
  echo "== round $r: streamed, slots walked downwards"
  bench s$r --seqlens 256 512 1024
  [ "${STREAM_UP:-1}" = 1 ] || continue
  echo "== round $r: streamed, slots walked upwards"
  FLASHKIT_FFTCONV_DIRECT90_WALK=up bench u$r --seqlens 256 512 1024
  [ "${STREAM_OLD:-1}" = 1 ] || continue
  echo "== round $r: one item per CTA"
  FLASHKIT_FFTCONV_DIRECT90_STREAM=0 bench o$r --seqlens 256 512 1024
done
if [ "${STREAM_FULL:-0}" = 1 ]; then
  timeout -k 10 200 "$bin" "[fftconv]" > "$W/t_fftconv.log" 2>&1
  echo "[fftconv]: $(grep -E '^(All tests passed|test cases:)' "$W/t_fftconv.log" | tail -n1) (${SECONDS} s)"
  grep -B4 -A16 FAILED "$W/t_fftconv.log" | head -40
  grep -A2 'max |err|' "$W/t_fftconv.log" | head -16
fi
tar czf "$OUT/stream90.tar.gz" -C "$W" .
