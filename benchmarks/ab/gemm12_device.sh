#!/usr/bin/env bash
# Branch gemm12's first device call (made in session 16; merged for 16-bit inputs: RESULTS.md,
# "128-column ping-pong schedule"): the [pingpong] cases for both ping-pong kinds,
# memcheck and racecheck of the small copy-engine-store case with the 128-column kind forced,
# then benchmarks/gemm.py with --ab-schedule (cooperative, pingpong64, pingpong128 in one
# process, same inputs, A B C C B A). Build here with `scripts/gpu-check.sh --build-only`, then
#   run(command="bash benchmarks/ab/gemm12_device.sh", carry=[".device"])
set -u
cd "$(dirname "$0")/../.."
for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
export LD_LIBRARY_PATH=$PWD/.device/lib
B=.device/bin/flashkit_tests_gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== [pingpong]"; timeout 200 $B "[pingpong]" 2>&1 | tail -4
for tool in memcheck racecheck; do
  echo "== $tool pingpong128 [tma_store_small]"
  FLASHKIT_SM90_GEMM_SCHEDULE=pingpong128 timeout 150 compute-sanitizer --tool $tool $B "[tma_store_small],[pp128_small]" 2>&1 | tail -3
done
echo "== bench"
timeout 300 python3 benchmarks/gemm.py --lib .device/lib/libflashkit.so --dtype bf16 --fp8 --ab-schedule --reps 15 --warmup 3 --json $OUT/gemm_pp1.json 2>&1 | grep -v "^\s*$" | tail -40
