#!/usr/bin/env bash
# Session 26: first run of cuda.sm80.fftconv_direct (the Toeplitz product for rows up to 2048).
# One call, carry .device (scripts/gpu-check.sh --build-only, then rm -rf .device/model
# .device/python .device/bin/flashkit_tests_cpu):
#   1. flashkit_tests_gpu "[fftconv]" (every FFT-convolution case, the direct ones among them),
#      then "[monarch],[graph],[workspace]" (main's Monarch changes since the last full check,
#      and the graph-capture / workspace cases of every family); memcheck on
#      "[direct][memcheck]".
#   2. benchmarks/fftconv.py (bf16, H 768, causal, D, gated and not; direct against the FFT
#      kernel and torch.fft in one process) at L 256..2048 with B 64 (B 32 at 2048), then L 1024
#      at B 16, 24 and 32, each by default and with FLASHKIT_FFTCONV_DIRECT=1 (the batch
#      threshold), and L 2048 at B 64.
# Everything in $OUT/direct.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-direct
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 240 "$bin" "[fftconv]" > "$W/t_fftconv.log" 2>&1
echo "[fftconv]: $(grep -E '^(All tests passed|test cases:)' "$W/t_fftconv.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A16 FAILED "$W/t_fftconv.log" | head -60
grep -A2 'max |err|' "$W/t_fftconv.log" | head -12
timeout -k 10 150 "$bin" "[monarch],[graph],[workspace]" > "$W/t_other.log" 2>&1
echo "[monarch],[graph],[workspace]: $(grep -E '^(All tests passed|test cases:)' "$W/t_other.log" | tail -n1) (${SECONDS} s)"
grep -B4 -A16 FAILED "$W/t_other.log" | head -40
timeout -k 10 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" "[direct][memcheck]" \
  > "$W/memcheck.log" 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tail -n1) (${SECONDS} s)"
timeout -k 5 150 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 256 512 1024 2048 --reps 10 \
  --json "$W/b64.json" 2>&1 | tee "$W/b64.log" | grep -v '^json'
echo "(${SECONDS} s)"
for B in 16 24 32; do
  timeout -k 5 60 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 1024 --batch $B --reps 10 \
    --json "$W/b$B.json" 2>&1 | tee "$W/b$B.log" | grep -v -e '^json' -e '^dtype'
  FLASHKIT_FFTCONV_DIRECT=1 timeout -k 5 60 python3 benchmarks/fftconv.py --lib "$LIB" \
    --seqlens 1024 --batch $B --reps 10 --json "$W/b${B}f.json" 2>&1 | tee "$W/b${B}f.log" \
    | grep -v -e '^json' -e '^dtype'
done
# L 2048 at B 64 (--batch 128: the script halves B per doubling of L past 1K).
timeout -k 5 60 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 2048 --batch 128 --reps 10 \
  --json "$W/l2k.json" 2>&1 | tee "$W/l2k.log" | grep -v -e '^json' -e '^dtype' 
echo "(${SECONDS} s)"
# The one-phase kernel (FLASHKIT_FFTCONV_DIRECT_SPLIT=0) at L 1024, B 64, same build.
FLASHKIT_FFTCONV_DIRECT_SPLIT=0 timeout -k 5 60 python3 benchmarks/fftconv.py --lib "$LIB" \
  --seqlens 1024 --reps 10 --json "$W/onephase.json" 2>&1 | tee "$W/onephase.log" \
  | grep -v -e '^json' -e '^dtype'
# Profiles of one direct-kernel launch at L 1K, B 64, not gated (the 4th launch: after the
# benchmark's first calls): speed of light, occupancy, pipes; then per SASS instruction.
timeout -k 10 90 ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats \
  -k regex:direct_kernel -s 3 -c 1 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 1024 \
  --warmup 1 --reps 1 > "$W/ncu_sol.txt" 2>&1
echo "ncu sol rc $? (${SECONDS} s)"
grep -E 'Duration|Throughput|Pipe|Achieved Occupancy|Registers|Block Limit|Executed Ipc|Issue Slots' "$W/ncu_sol.txt" | head -40
OUT_SAVE=$OUT; OUT=$W
sass_profile direct_1k direct_kernel 3 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 1024 \
  --warmup 1 --reps 1
OUT=$OUT_SAVE
tar czf "$OUT/direct.tar.gz" -C "$W" .
