#!/usr/bin/env bash
# Session 51: the issues' benchmark tables on one build in one device call (the device tool lent
# few machines this session): issue 6's 36-cell attention grid (benchmarks/attention.py AUTO,
# both anchors in the same process, with the varlen and GQA rows), then issue 8's FFT
# convolution grid (benchmarks/fftconv.py, L 256..32K, gated and not) and the Monarch grid
# (benchmarks/monarch.py), each bounded so the call ends inside 600 s. Carry [".device/lib"].
# JSON in $OUT; the tables on stdout. ATTN_REPS / FFT_REPS set the repetitions.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
echo "== attention.py, AUTO (${SECONDS} s)"
timeout -k 5 ${ATTN_LIMIT:-300} python3 benchmarks/attention.py --lib "$LIB" --reps ${ATTN_REPS:-10} \
  --json "$OUT/attention_auto.json" 2>&1 | grep -vE "^\s*$" | cut -c1-200 | tail -60
if [ $SECONDS -lt 430 ]; then
  echo "== fftconv.py, full grid (${SECONDS} s)"
  timeout -k 5 $((540 - SECONDS)) python3 benchmarks/fftconv.py --lib "$LIB" --reps ${FFT_REPS:-10} \
    --json "$OUT/fftconv_bench.json" 2>&1 | grep -vE "^\s*$" | cut -c1-200
fi
if [ $SECONDS -lt 500 ]; then
  echo "== monarch.py (${SECONDS} s)"
  timeout -k 5 $((585 - SECONDS)) python3 benchmarks/monarch.py --lib "$LIB" --reps 10 \
    --json "$OUT/monarch_bench.json" 2>&1 | grep -vE "^\s*$" | cut -c1-220 | tail -30
fi
echo "== done (${SECONDS} s)"
