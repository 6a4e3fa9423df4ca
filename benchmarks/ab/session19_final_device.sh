#!/usr/bin/env bash
# Staged in session 19 for the next device session (not run: the session's device time ran
# out), on main's build (.device):
#   1. `[fftconv]`, including session 19's four new cases (fp16/bf16 at fft_size 4M, circular at
#      2^17 and 2^20, B = 64 at fft_size 16K/32K, H = 768 at L 4K/8K; a helper ran them once on
#      the H200 through a build of its own, output not kept);
#   2. the ring depth at 64 k-tiles: the Hopper GEMM gives 3 stages to tiles of more than 32
#      k-tiles, cuBLAS's kernels at the same shapes run 4 (ncu, "Issue 7's whole grid"). Default
#      against FLASHKIT_SM90_GEMM_STAGES=4 (read once per process), order default 4 4 default,
#      bf16 and fp16 at 4096^3, 4096 x 12288 x 4096 and 8192^3.
# run(command="bash benchmarks/ab/session19_final_device.sh", carry=[".device"]).
set -u
cd "$(dirname "$0")/../.."
for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
LIB=$PWD/.device/lib/libflashkit.so
export LD_LIBRARY_PATH=$PWD/.device/lib
OUT=${OUT:-/tmp/fk-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== 1. new FFT convolution cases"
timeout -k 5 200 .device/bin/flashkit_tests_gpu "${FK_FFT_FILTER:-[fftconv]}" 2>&1 | tail -4
echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
echo "== 2. ring depth: default vs FLASHKIT_SM90_GEMM_STAGES=4"
for st in default 4 4 default; do
  echo "-- stages $st"
  if [ "$st" = default ]; then env=(); else env=(FLASHKIT_SM90_GEMM_STAGES=$st); fi
  env "${env[@]}" timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 fp16 \
    --no-fused --shapes 4096x4096x4096 4096x12288x4096 8192x8192x8192 --reps 20 --warmup 5 \
    --json "$OUT/stages_$st.json" 2>&1 | grep -E "^gemm " | cut -c1-100
done
echo "(${SECONDS} s)"
rm -f "$OUT"/stages_*.json
