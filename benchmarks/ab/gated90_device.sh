#!/usr/bin/env bash
# Session 38: gated calls on the streamed cuda.sm90.fftconv_direct (pregate multiplied into
# each slot of v in shared memory, postgate staged by cp.async in the epilogue). One call, carry
# .device (scripts/gpu-check.sh --build-only, then rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu on the direct-kernel cases ("[stream]", the predicate, non-finite
#      rows, contiguous rows, the memcheck case, the error summary); memcheck and racecheck on
#      the sm90 small case.
#   2. benchmarks/fftconv.py (bf16, B 64, H 768, causal, D, gated and not) on the sides below.
# Everything in $OUT/gated90.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-gated90
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
n=0
tests=("[stream]" "sm90 fftconv_direct: the predicate under AUTO"
  "sm80 fftconv_direct: non-finite inputs spread to the whole row"
  "sm90 fftconv_direct: contiguous rows\\, small batches" "sm90 fftconv_direct: small case for memcheck"
  "sm90 fftconv_direct: AUTO's window" "sm80 fftconv: error summary")
[ "${TESTS:-all}" = short ] && tests=("[stream]" "sm90 fftconv_direct: small case for memcheck")
for t in "${tests[@]}"; do
  n=$((n + 1))
  timeout -k 10 200 "$bin" "$t" > "$W/t$n.log" 2>&1
  echo "$t: $(grep -E '^(All tests passed|test cases:)' "$W/t$n.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$W/t$n.log" | head -60
done
grep -h "max |err|" "$W"/t*.log | sort -u
for tool in ${TOOLS:-memcheck racecheck}; do
  sanitize_case "$bin" $tool "sm90 fftconv_direct: small case for memcheck"
done
cp "$OUT"/memcheck.log "$OUT"/racecheck.log "$W"/ 2>/dev/null
bench() {  # NAME ARGS...
  local name=$1
  shift
  timeout -k 5 150 python3 benchmarks/fftconv.py --lib "$LIB" --reps ${REPS:-20} --json "$W/$name.json" "$@" \
    2>&1 | tee "$W/$name.log" | grep -v -e '^json'
  echo "($name: ${SECONDS} s)"
}
# Sides: A = FLASHKIT_FFTCONV_DIRECT90_GATED=0 (gated calls on the sm80 kernel), B = default,
# C = $C_ENV (default FLASHKIT_FFTCONV_DIRECT90_POSTL1=0: no L1 prefetch of the next postgate
# quarter); order $ORDER (default A B C C B A). TESTS=short runs only "[stream]" and the
# memcheck case above.
for side in ${ORDER:-A B C C B A}; do
  case $side in
    A) envs="FLASHKIT_FFTCONV_DIRECT90_GATED=0" ;;
    B) envs="" ;;
    C) envs=${C_ENV:-FLASHKIT_FFTCONV_DIRECT90_POSTL1=0} ;;
  esac
  r=1
  [ -f "$W/${side}_r1.json" ] && r=2
  echo "== round $r: $side ($envs)"
  (
    [ -n "$envs" ] && export "$envs"
    bench ${side}_r$r --seqlens ${SEQLENS:-256 512 1024}
  )
done
tar czf "$OUT/gated90.tar.gz" -C "$W" .
