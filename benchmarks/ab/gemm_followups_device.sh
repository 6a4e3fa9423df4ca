#!/usr/bin/env bash
# Hopper GEMM follow-ups left by session 18, one device call on main's build (.device):
#   1. The stack frames that the lean epilogue's three bodies grew in the 4-stage cooperative
#      kernels (16-bit 8 -> 32 bytes, fp8 40 -> 48; outside the k-loop): time the split-K
#      launches that run them against main 71f15c1's library (.device-old/lib.so.gz, saved in
#      session 18): fp8 128 x 8192 x 8192, and bf16 128 x 8192 x 8192 with the skinny kernel
#      off (--sweep-skinny 0: the cooperative split-K kernel, same process).
#   2. pick_pingpong's rule for fused epilogues (ping-pong up to 64 k-tiles) was measured when
#      bias + GELU ran the general loop; it is lean now: --ab-schedule on the fused rows.
#   3. bf16 4096 x 12288 x 4096, whose consumers wait for full stages 43% of the time (ncu):
#      raster group sizes and order, each in its own process (gemm.py --tune --tune-raster).
# Staging: scripts/gpu-check.sh --build-only on main (rm -rf .device/model), then
#   run(command="bash benchmarks/ab/gemm_followups_device.sh", carry=[".device", ".device-old"]).
# About 250 s.
set -u
cd "$(dirname "$0")/../.."
for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
rm -rf .device-old/lib && cp -a .device/lib .device-old/lib
gunzip -c .device-old/lib.so.gz > ".device-old/lib/$(basename "$(readlink -f .device/lib/libflashkit.so)")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
NEW=.device/lib/libflashkit.so OLD=.device-old/lib/libflashkit.so
echo "== 1. split-K on the 4-stage cooperative kernels: old (71f15c1) new new old"
for lib in $OLD $NEW $NEW $OLD; do
  echo "-- $lib"
  timeout -k 5 60 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --fp8 --no-fused \
    --shapes 128x8192x8192 --sweep-skinny 0 --reps 20 --warmup 5 --json /tmp/fu.json 2>&1 |
    grep -E "^  (bf16|fp8)|skinny=|Error|Traceback" | cut -c1-140
done
echo "== 2. fused rows under each schedule (main)"
timeout -k 5 90 python3 benchmarks/gemm.py --lib $NEW --dtype bf16 --ab-schedule \
  --shapes 4096x4096x4096 8192x8192x8192 --reps 10 --warmup 3 --json "$OUT/ab_schedule.json" 2>&1 |
  grep -E "^  (fused|bf16)|Error|Traceback" | cut -c1-260
echo "== 3. 4096 x 12288 x 4096: raster group and order, a process each"
timeout -k 5 150 python3 benchmarks/gemm.py --lib $NEW --dtype bf16 --no-fused --tune --tune-raster \
  --shapes 4096x12288x4096 --reps 10 --warmup 3 --json "$OUT/tune.json" 2>&1 |
  grep -E "^  (bf16|tune)|Error|Traceback" | cut -c1-140
