#!/usr/bin/env bash
# Session 53: head_dim 64 causal calls over fewer than 2048 keys on the 192-row tiles
# (FLASHKIT_SM90_ATTENTION_WG3=2) against the default 128-row tiles, now that causal tiles run
# in pairs (an even count of 192-row tiles pairs: 1024 keys = 6 tiles; 512 keys = 3 stays
# longest first). The rule (attention_sm90.cpp, kMaskedRows192Keys) was set under the
# longest-first order. One library (.device, main); order A W W A, anchors in each process.
# carry [".device/lib"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
AB_LIB_A=$LIB AB_ENV_W="FLASHKIT_SM90_ATTENTION_WG3=2" attn_ab "A W W A" --causal 1 \
  --head-dims 64 --seqlens 512,1024,1536,2048 --no-extra --reps 20
echo "== done (${SECONDS} s)"
