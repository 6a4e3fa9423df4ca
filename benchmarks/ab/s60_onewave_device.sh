#!/usr/bin/env bash
# Session 60: the Hopper row's split fits one wave (plan_split_kv one_wave). A = the library
# before (.device-b/lib.so.xz, 7044ffd), B = .device (BUILD_INFO). Carry [".device/lib",
# ".device/bin", ".device-b/lib.so.xz"], ~150 s: one query, --kv-calls 10, A B B A, over a
# contiguous cache and batched; tile counts 48 (A: 5 chunks, B: 2), 64 (both 2: control),
# 68-96 (A split in 3-5, B unsplit); then `[split]` and `[kvcache]`.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export KV_LIB_A=$PWD/.device-b/lib/libflashkit.so
kv_ab w X=0 "32,4,128" --kv-queries 1 --kv-pages 0 --kv-shapes 12x8192,16x8192,17x8192,20x8192 --kv-calls 10
kv_ab x X=0 "32,8,128" --kv-queries 1 --kv-pages 0 --kv-shapes 6x8192,9x8192,12x8192 --kv-calls 10
kv_ab y X=0 "16,2,64" --kv-queries 1 --kv-pages 0 --kv-shapes 24x8192,34x8192,48x8192 --kv-calls 10
GPU_CASE_LIMIT=60 gpu_case .device/bin/flashkit_tests_gpu "[split]"
GPU_CASE_LIMIT=120 gpu_case .device/bin/flashkit_tests_gpu "[kvcache]"
echo "== done (${SECONDS} s)"
