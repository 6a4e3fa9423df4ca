#!/usr/bin/env bash
# Session 43: the fp8 attention kernel with V transposed in shared memory at head_dim 128
# (branch vtk). Checks ([fp8], the small [sanitize] case under compute-sanitizer memcheck and
# racecheck), then benchmarks/attention_fp8.py at head_dim 128 twice and head_dim 256 once.
# (The session's first call also timed three K / V stages through a temporary switch,
# FLASHKIT_SM90_ATTENTION_FP8_STAGES, removed after: within the run-to-run spread at head_dim
# 128, no gain at 256.) Carry .device. Logs and JSON in $OUT/vtk.
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.device/lib
for z in .device/lib/*.gz; do gunzip -kf "$z"; done
W=${OUT:-/tmp}/vtk
mkdir -p "$W"
T=.device/bin/flashkit_tests_gpu
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
$T "[fp8]" > "$W/fp8.log" 2>&1; echo "[fp8] rc $? $(tail -3 "$W/fp8.log" | tr '\n' ' ') (${SECONDS} s)"
for tool in memcheck racecheck; do
  $CS --tool $tool $T "gpu attention fp8: small case" > "$W/$tool.log" 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -1) (${SECONDS} s)"
done
for run in 1 2; do
  timeout -k 5 150 python3 benchmarks/attention_fp8.py --lib .device/lib --json "$W/hd128_$run.json" > "$W/hd128_$run.log" 2>&1
  echo "hd128 run $run rc $? (${SECONDS} s)"; tail -13 "$W/hd128_$run.log"
done
timeout -k 5 150 python3 benchmarks/attention_fp8.py --lib .device/lib --head-dim 256 --json "$W/hd256.json" > "$W/hd256.log" 2>&1
echo "hd256 rc $?"; tail -13 "$W/hd256.log"
