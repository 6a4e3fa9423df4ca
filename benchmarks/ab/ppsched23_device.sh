#!/usr/bin/env bash
# Session 23: the three Hopper GEMM schedules forced in one process (benchmarks/gemm.py
# --ab-schedule: cooperative, pingpong64, pingpong128, A B C C B A) on the long-K 16-bit shapes
# where the table picks the cooperative one, on main's library (.device-b/lib.so.gz staged by
# ab_stage), twice. Carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export LD_LIBRARY_PATH=$PWD/.device-b/lib
for run in 1 2; do
  timeout -k 5 150 python3 benchmarks/gemm.py --lib .device-b/lib/libflashkit.so --dtype bf16 fp16 \
    --no-fused --ab-schedule --reps 20 --warmup 5 \
    --shapes 4096x4096x4096 4096x12288x4096 8192x8192x8192 16384x16384x16384 \
    --json "$OUT/pp_$run.json" > "$OUT/pp_$run.txt" 2>&1
  echo "run $run rc $? (${SECONDS} s)"
  grep -A30 "^op " "$OUT/pp_$run.txt" | cut -c1-200
done
