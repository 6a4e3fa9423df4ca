#!/usr/bin/env bash
# Session 21 (branch atrace21): the per-tile timeline of the Hopper attention kernel at head_dim
# 128 (src/cuda/attention/sm90/trace.h), on the grid's short and long cells, causal and not:
# where a tile's time goes besides the key loop (its WorkTile, the wait for its Q, the wait for
# its first K tile, the epilogue), the question the GEMM's timeline answered for the GEMM
# (benchmarks/RESULTS.md, "The cooperative kernel's per-tile timeline").
# Staging (here): cmake --preset gpu -DFLASHKIT_ATTENTION_TRACE=ON && scripts/gpu-check.sh
# --build-only (then OFF again); carry [".device"] (.device/model may be left out).
# run(command="bash benchmarks/ab/atrace21_device.sh", carry=[".device"]) (about 60 s); then,
# here, python3 benchmarks/ab/attn_trace.py <files_at>/atrace.txt.gz
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
if ! grep -aq FLASHKIT_SM90_ATTENTION_TRACE "$LIB"; then
  echo "$LIB is not an attention tracing build"; exit 1
fi
rm -f "$OUT"/atrace.txt*
FLASHKIT_SM90_ATTENTION_TRACE="$OUT/atrace.txt" timeout -k 5 120 python3 benchmarks/attention.py \
  --lib .device/lib --family sm90 --head-dims 128 --seqlens 512,1024,4096 --causal 0,1 \
  --warmup 1 --reps 1 --no-anchors --no-extra --json "$OUT/traced.json" 2>&1 | tail -3
python3 benchmarks/ab/attn_trace.py "$OUT/atrace.txt" 2>&1 | head -150
gzip -f "$OUT/atrace.txt"
# The tracing build's own speed, untraced, against the anchors (cuDNN, FA2) in the same process.
timeout -k 5 150 python3 benchmarks/attention.py --lib .device/lib --family sm90 --head-dims 128 \
  --seqlens 512,1024,4096 --causal 0,1 --no-extra --json "$OUT/untraced.json" 2>&1 | tail -12
ls -la "$OUT"
