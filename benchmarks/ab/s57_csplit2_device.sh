#!/usr/bin/env bash
# Session 58: not run as a whole (device time); its parts ran as single commands, RESULTS
# "Session 58: main's full GPU check, and the vectorised split-KV kernels"; cs57vec merged.
# Prepared in session 57, NOT run (no device time left): the split-KV prepare and combine
# kernels on 16-byte vectors (benchmarks/ab/csvec57.patch, branch cs57vec). .device holds the
# build of those kernels WITHOUT the causal bound merged in session 57 (branch cs57vec-norule,
# babe63f: the 8 x 8k cells still split, so that their gain can be measured; BUILD_INFO says
# so), .device-b/lib.so.xz the csplit56 library (one element a thread). Carry
# [".device/lib", ".device/bin", ".device-b/lib.so.xz"], ~250 s:
#   1. every split case (`[split]`: decode, forced counts, KV caches, causal rows, the new
#      element-path case) and both sanitizers on the two small cases;
#   2. Nsight Compute durations of the three kernels on two cells (s57_csplit_prof.sh's);
#   3. the new library against csplit56's (A), A B B A: decode and causal cells;
#   4. SPLIT_KV=0 (A) against the split (B), s56_csplit_device.sh's grid, one call per event
#      pair (latency, as before), contiguous caches (128-key pages: session 56, 0.13-1.25).
# If the 8 x 8k rows gain, widen kMaxCausalRows / the quarter-wave bound (split_kv_plan.h)
# and merge cs57vec; rebuild before any merge check (the bound is host code).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
LIB=$PWD/.device/lib/libflashkit.so
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=200 gpu_case $bin "[split]"
sanitize_both $bin "attention: split-KV where the 16-byte copies do not apply"
sanitize_both $bin "attention kvcache: causal split-KV small case"
for cell in "32,4,128 1x32768 16" "32,8,128 8x8192 16"; do
  set -- $cell
  timeout -k 5 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python3 benchmarks/attention.py --lib "$LIB" --only-kvcache --kv-heads "$1" --no-anchors \
    --warmup 1 --reps 2 --kv-queries "$3" --kv-pages 0 --kv-shapes "$2" > "$OUT/p.csv" 2>&1
  echo "== ncu $cell rc $? (${SECONDS} s)"
  grep -E "split_kv|attention_sm90" "$OUT/p.csv" | awk -F'","' '{n=$5; sub(/\(.*/,"",n); print "  " n, $NF}' | tail -3
done
KV_LIB_A=$PWD/.device-b/lib/libflashkit.so kv_ab v X=1 "32,8,128 32,4,128" --kv-queries 1,4,16 \
  --kv-pages 0 --kv-shapes 1x32768,8x8192
kv_ab c FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128 32,4,128" --kv-queries 2,4,8,16 --kv-pages 0 \
  --kv-shapes 1x32768,2x16384,4x8192,8x8192
echo "== done (${SECONDS} s)"
