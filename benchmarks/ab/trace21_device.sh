#!/usr/bin/env bash
# Session 21 (branch trace20's tracing build): the per-tile timeline of the cooperative kernel
# under the run-time variants that need no rebuild: the default (3-stage ring, copy-engine
# epilogue), FLASHKIT_SM90_GEMM_STAGES=4 (4-stage ring, 2 boxes a warpgroup) and
# FLASHKIT_SM90_GEMM_EPILOGUE=regs (register stores). Then the untraced speed of each variant
# against cuBLAS, in one process per variant.
# run(command="bash benchmarks/ab/trace21_device.sh", carry=[".device"]) (about 90 s).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
if ! grep -aq FLASHKIT_SM90_GEMM_TRACE "$LIB"; then
  echo "$LIB is not a tracing build"; exit 1
fi
rm -f "$OUT"/trace_*.txt
for variant in default stages4 regs; do
  envs="FLASHKIT_SM90_GEMM_SCHEDULE=cooperative"
  [ $variant = stages4 ] && envs="$envs FLASHKIT_SM90_GEMM_STAGES=4"
  [ $variant = regs ] && envs="$envs FLASHKIT_SM90_GEMM_EPILOGUE=regs"
  for shape in "4096 4096 4096" "8192 8192 8192"; do
    set -- $shape
    f="$OUT/trace_${variant}_$1x$2x$3.txt"
    echo "== $variant $1x$2x$3"
    env $envs FLASHKIT_SM90_GEMM_TRACE="$f" \
      timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --profile "$1" "$2" "$3" >/dev/null 2>&1
    python3 benchmarks/ab/gemm_trace.py "$f" 2>&1 | grep -E "launch |wait for the first|k-tiles, per|epilogue|waiting|busy|issue to full|before the consumer|span"
  done
  echo "== $variant untraced"
  env $envs timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 --no-fused \
    --shapes 4096x4096x4096 8192x8192x8192 --reps 20 --warmup 5 2>&1 | grep -E "^gemm" | cut -c1-90
done
gzip -f "$OUT"/trace_*.txt
ls -la "$OUT"
