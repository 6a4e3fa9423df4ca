#!/usr/bin/env bash
# Session 30, one call (carry .device without its model and .device-b = a829eba's library):
# benchmarks/fftconv.py A B B A (A = .device-b, B = .device: the streamed kernel's wide and
# narrow launch shapes, the lean epilogue and the diagonal fence), then the GPU check on
# .device's library (no demo, no attention switch passes; FK_GPU_CHECK_BUDGET=$BUDGET).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
fftconv_ab "${SEQLENS:-256 512 1024}"
FK_GPU_CHECK_BUDGET=${BUDGET:-480} FK_GPU_CHECK_VARIANTS=0 FK_GPU_CHECK_DEMO=0 scripts/gpu-check.sh --run-only
