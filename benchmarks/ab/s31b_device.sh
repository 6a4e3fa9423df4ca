#!/usr/bin/env bash
# Session 31: benchmarks/fftconv.py twice (L 256 / 512 / 1K) on .device alone (carry .device
# without bin, model and python): a second lease for the merged streamed kernel.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
for r in 1 2; do
  LD_LIBRARY_PATH=$PWD/.device/lib timeout 100 python3 benchmarks/fftconv.py --lib "$LIB" --reps 10 \
    --seqlens 256 512 1024 2>&1 | grep -v '^json' | grep -v True
done
