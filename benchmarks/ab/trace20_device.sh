#!/usr/bin/env bash
# Staged in session 20 for a later device session (branch trace20): the per-tile timeline of the
# Hopper GEMM's cooperative kernel, to tell where its extra time against cuBLAS at 4096^3 goes
# (benchmarks/RESULTS.md, "Where the last 3% at 4096^3 goes"): the wait for each tile's first
# full stage, the k-loop per k-tile, the epilogue, the producer's wait for a free slot and the
# first stage's load latency (src/cuda/gemm/sm90/trace.h).
# Staging (here): cmake --preset gpu -DFLASHKIT_GEMM_TRACE=ON && scripts/gpu-check.sh --build-only
# (then -DFLASHKIT_GEMM_TRACE=OFF again for release builds). About 60 s.
# run(command="bash benchmarks/ab/trace20_device.sh", carry=[".device"]); then, here,
# python3 benchmarks/ab/gemm_trace.py <files_at>/trace_<shape>.txt
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
# The getenv string exists only in a tracing build: stop before wasting the call on a release one.
if ! grep -aq FLASHKIT_SM90_GEMM_TRACE "$LIB"; then
  echo "$LIB is not a tracing build (cmake --preset gpu -DFLASHKIT_GEMM_TRACE=ON, then stage)"
  exit 1
fi
rm -f "$OUT"/trace_*.txt
for shape in "4096 4096 4096" "4096 12288 4096" "8192 8192 8192" "8192 8192 1024"; do
  set -- $shape
  # The cooperative schedule on every shape (K = 1024 would take ping-pong, which has no stamps).
  FLASHKIT_SM90_GEMM_SCHEDULE=cooperative FLASHKIT_SM90_GEMM_TRACE="$OUT/trace_$1x$2x$3.txt" \
    timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --profile "$1" "$2" "$3" 2>&1 | tail -5
  python3 benchmarks/ab/gemm_trace.py "$OUT/trace_$1x$2x$3.txt" 2>&1 | head -24
done
# The tracing build's own speed (its stamps cost registers: 20 bytes of spills in the
# cooperative kernel, outside the k-loop), untraced calls, against cuBLAS.
timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 --no-fused \
  --shapes 4096x4096x4096 4096x12288x4096 --reps 20 --warmup 5 --json "$OUT/untraced.json" 2>&1 \
  | grep -E "^gemm" | cut -c1-90
ls -la "$OUT"
