#!/usr/bin/env bash
# Session 36: per-instruction source pages (ncu --page source, WarpStateStats + SourceCounters)
# of the forced sm80-class attention kernel and of torch's FlashAttention-2 on the two non-causal
# cells furthest behind FA2 (head_dim 64 / 512 keys, head_dim 256 / 2048 keys), same inputs.
# CSVs come back in $OUT/sass80.tar.gz (read with benchmarks/ncu_sass.py).
# Staging as ncu80b_device.sh; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
NDIR=/tmp/fk-sass80
mkdir -p "$NDIR"
one() {  # one TAG HEAD_DIM SEQLEN
  local args=(--lib "$LIB" --family sm80 --head-dims "$2" --seqlens "$3" --causal 0 --no-extra
    --warmup 2 --reps 3)
  OUT=$NDIR sass_profile "fk_$1" attention_fwd_kernel 2 python3 benchmarks/attention.py \
    "${args[@]}" --no-anchors
  OUT=$NDIR sass_profile "fa2_$1" flash_fwd_kernel 2 python3 benchmarks/attention.py "${args[@]}"
}
one hd64_s512 64 512
one hd256_s2048 256 2048
tar czf "$OUT/sass80.tar.gz" -C "$NDIR" .
ls -la "$NDIR"
