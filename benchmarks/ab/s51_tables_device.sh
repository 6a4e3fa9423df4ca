#!/usr/bin/env bash
# Session 51: the issues' benchmark tables on one build in one device call (the device tool lent
# few machines this session): issue 6's 36-cell attention grid (benchmarks/attention.py AUTO,
# both anchors in the same process, with the varlen and GQA rows), then issue 8's FFT
# convolution grid (benchmarks/fftconv.py, L 256..32K, gated and not) and the Monarch grid
# (benchmarks/monarch.py), each bounded so the call ends inside 600 s. Carry [".device/lib"].
# JSON in $OUT; the tables on stdout. ATTN_REPS / FFT_REPS set the repetitions, ATTN_LIMIT the
# attention grid's seconds, END the call's.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
END=${END:-585}  # seconds the call may take in all
echo "== attention.py, AUTO (${SECONDS} s)"
timeout -k 5 ${ATTN_LIMIT:-300} python3 benchmarks/attention.py --lib "$LIB" --reps ${ATTN_REPS:-10} \
  --json "$OUT/attention_auto.json" 2>&1 | grep -vE "^\s*$" | cut -c1-200 | tail -60
if [ $SECONDS -lt $((END - 185)) ]; then
  echo "== fftconv.py, full grid (${SECONDS} s)"
  timeout -k 5 $((END - 85 - SECONDS)) python3 benchmarks/fftconv.py --lib "$LIB" --reps ${FFT_REPS:-10} \
    --json "$OUT/fftconv_bench.json" 2>&1 | grep -vE "^\s*$" | cut -c1-200
fi
# Issue 6's features never timed (fp16, softcap, a sliding window), a few cells each, if time
# is left (flashkit alone where SDPA has no such option).
if [ $SECONDS -lt $((END - 115)) ]; then
  echo "== fp16 (${SECONDS} s)"
  timeout -k 5 40 python3 benchmarks/attention.py --lib "$LIB" --dtype fp16 --head-dims 64,128,256 \
    --seqlens 1024,8192 --no-extra --reps 10 --json "$OUT/attention_fp16.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-160
  echo "== softcap 30, window (1024, 0), bf16 (${SECONDS} s)"
  timeout -k 5 25 python3 benchmarks/attention.py --lib "$LIB" --softcap 30 --head-dims 128 \
    --seqlens 1024,8192 --no-extra --reps 10 --json "$OUT/attention_softcap.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-160
  timeout -k 5 25 python3 benchmarks/attention.py --lib "$LIB" --window 1024,0 --head-dims 128 \
    --seqlens 4096,16384 --no-extra --reps 10 --json "$OUT/attention_window.json" 2>&1 | grep -E '^ *[0-9]' | cut -c1-160
fi
if [ $SECONDS -lt $((END - 65)) ]; then
  echo "== monarch.py (${SECONDS} s)"
  timeout -k 5 $((END - SECONDS)) python3 benchmarks/monarch.py --lib "$LIB" --reps 10 \
    --json "$OUT/monarch_bench.json" 2>&1 | grep -vE "^\s*$" | cut -c1-220 | tail -30
fi
echo "== done (${SECONDS} s)"
