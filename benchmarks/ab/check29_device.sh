#!/usr/bin/env bash
# Session 29: the streamed cuda.sm90.fftconv_direct with the NaN check split among the
# warpgroups (FLASHKIT_FFTCONV_DIRECT90_OPT bit 0) and the epilogue staged per warp (bit 1).
# One call, carry .device (scripts/gpu-check.sh --build-only, then rm -rf .device/model
# .device/python .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu "[stream]" and the non-finite rows case, for OPT=3 (default) and the
#      other settings in OPTS_TEST; memcheck and racecheck on the sm90 small case (default OPT).
#   2. benchmarks/fftconv.py (bf16, B 64, H 768, causal, D, not gated) for each OPT in OPTS
#      (default "0 1 2 3"), two rounds in alternating order.
# Everything in $OUT/check29.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-check29
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
for o in ${OPTS_TEST:-3 0}; do
  FLASHKIT_FFTCONV_DIRECT90_OPT=$o timeout -k 10 150 "$bin" "[stream]" > "$W/t_stream_$o.log" 2>&1
  echo "OPT=$o [stream]: $(grep -E '^(All tests passed|test cases:)' "$W/t_stream_$o.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$W/t_stream_$o.log" | head -60
  FLASHKIT_FFTCONV_DIRECT90_OPT=$o timeout -k 10 60 "$bin" "sm80 fftconv_direct: non-finite inputs spread to the whole row" > "$W/t_nan_$o.log" 2>&1
  echo "OPT=$o non-finite: $(grep -E '^(All tests passed|test cases:)' "$W/t_nan_$o.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$W/t_nan_$o.log" | head -60
done
for tool in ${TOOLS:-memcheck racecheck}; do
  timeout -k 10 120 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
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
opts=${OPTS:-0 1 2 3}
for r in 1 2; do
  order=$opts
  [ "$r" = 2 ] && order=$(echo $opts | tr ' ' '\n' | tac | tr '\n' ' ')
  for o in $order; do
    echo "== round $r: OPT=$o"
    FLASHKIT_FFTCONV_DIRECT90_OPT=$o bench o${o}_r$r --seqlens ${SEQLENS:-256 512 1024}
  done
done
if [ "${PROF:-1}" = 1 ]; then  # ncu throughput metrics of one launch at L 1K, default OPT
  timeout -k 10 120 ncu --clock-control none -k regex:stream90 -s 2 -c 1 --metrics \
gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
    python3 benchmarks/fftconv.py --lib "$LIB" --reps 3 --warmup 1 --seqlens 1024 > "$W/metrics.txt" 2>&1
  echo "ncu rc $? (${SECONDS} s)"
  grep -E "gpu__time|gmma|dram__|sm__throughput|bank_|inst_executed" "$W/metrics.txt" | head -12
fi
tar czf "$OUT/check29.tar.gz" -C "$W" .
