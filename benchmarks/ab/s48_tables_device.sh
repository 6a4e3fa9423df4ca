#!/usr/bin/env bash
# Session 48 (prepared): issue 8's two benchmark tables in one call on one build, as the issue
# defines them (the evidence audit of session 47 found the FFT numbers split over sessions
# 31-39 and no current Monarch table with both anchors): benchmarks/fftconv.py's full grid
# (bf16, B 64 (64K / L above L 1K), H 768, L 256..32K, gated and not, constant and plain plans,
# torch.fft anchor in the same process) and benchmarks/monarch.py's full grid (16384 / 65536
# tokens, n 1024 / 4096 / 16384, two-bmm and dense anchors). Carry [".device/lib"].
# JSON in $OUT (fftconv_bench.json, monarch_bench.json); the tables on stdout.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
echo "== fftconv.py, full grid (${SECONDS} s)"
timeout -k 5 300 python3 benchmarks/fftconv.py --lib "$LIB" --reps 20 --json "$OUT/fftconv_bench.json" 2>&1 | \
  grep -vE "^\s*$" | cut -c1-200
echo "== monarch.py, full grid (${SECONDS} s)"
timeout -k 5 240 python3 benchmarks/monarch.py --lib "$LIB" --json "$OUT/monarch_bench.json" 2>&1 | \
  grep -vE "^\s*$" | cut -c1-220 | tail -40
echo "== done (${SECONDS} s)"
