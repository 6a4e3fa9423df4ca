#!/usr/bin/env bash
# Session 52: is head_dim 128, seqlen 1k without softcap slower on branch softcap52 (.device)
# than on main (c4dcd1d, .device-b)? s52_softcap_device.sh read 518-528 against 569 TFLOP/s
# (non-causal) and 326-331 against 346-350 (causal), where softcap51 had read 520 once and 572
# once. Alternates the two libraries ROUNDS times (default 5), one process each, head_dim 128
# and 256 at seqlen 1k and 8k, causal and not, no softcap, flashkit alone. Carry [".device/lib",
# ".device/bin", ".device-b"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
for r in $(seq "${ROUNDS:-5}"); do
  for s in A C; do
    lib=.device/lib/libflashkit.so
    [ "$s" = A ] && lib=.device-b/lib/libflashkit.so
    LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 40 python3 benchmarks/attention.py --lib "$lib" \
      --head-dims 128,256 --seqlens 1024,8192 --no-extra --no-anchors --reps 20 \
      --json "$OUT/rep_$s$r.json" 2>&1 | grep -E '^ *[0-9]' | awk -v s="$s$r" '{printf "%s %s/%s/%s %s  ", s, $1, $2, $5, $6} END {print ""}'
  done
done
echo "== done (${SECONDS} s)"
