#!/usr/bin/env bash
# Session 22: causal head_dim 64 below 4096 keys on the 192-row tiles (FLASHKIT_SM90_ATTENTION_WG3=2,
# now without head sections) against the table's 128-row tiles (default), one library (.device,
# main a58b568), one process per run, order D W W D W D D W. Carry .device.
exec bash "$(dirname "$0")/envab_device.sh" wg3 W FLASHKIT_SM90_ATTENTION_WG3=2 --causal 1 \
  --head-dims 64 --seqlens 512,1024,2048,4096
