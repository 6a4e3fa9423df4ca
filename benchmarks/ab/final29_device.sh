#!/usr/bin/env bash
# Session 29, one call (carry .device without its model, and .device-b): the streamed
# sm90 direct kernel with D folded into the tap on diagonal 0 (.device) against a829eba
# (.device-b): "[stream]" and the non-finite case on .device's library first; then
# benchmarks/fftconv.py A B B A (ab29_device.sh); then the GPU check (no demo, no attention
# switch passes) on .device's library, or on a829eba's when the first tests failed.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage >/dev/null
bin=.device/bin/flashkit_tests_gpu
ok=1
for t in "[stream]" "sm80 fftconv_direct: non-finite inputs spread to the whole row"; do
  timeout -k 10 150 "$bin" "$t" > "$OUT/t.log" 2>&1 || ok=0
  echo "new lib $t: $(grep -E '^(All tests passed|test cases:)' "$OUT/t.log" | tail -n1) (${SECONDS} s)"
  grep -B6 -A24 FAILED "$OUT/t.log" | head -40
done
TEST=0 PROF=0 ORDER="A B B A" bash benchmarks/ab/ab29_device.sh
if [ $ok = 0 ]; then
  echo "== the new library failed: the GPU check runs a829eba's"
  real=$(basename "$(readlink -f .device/lib/libflashkit.so)")
  cp .device-b/lib.so.gz ".device/lib/$real.gz"
fi
FK_GPU_CHECK_BUDGET=${BUDGET:-450} FK_GPU_CHECK_VARIANTS=0 FK_GPU_CHECK_DEMO=0 scripts/gpu-check.sh --run-only
