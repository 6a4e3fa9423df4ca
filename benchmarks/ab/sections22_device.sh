#!/usr/bin/env bash
# Session 22: the Hopper attention's causal head sections (FLASHKIT_SM90_ATTENTION_SECTIONS=0
# turns them off) on one library (.device, main), causal cells only, runs in the order
# D S S D S D D S (D = default, S = sections off), one process each. Carry .device.
exec bash "$(dirname "$0")/envab_device.sh" sec S FLASHKIT_SM90_ATTENTION_SECTIONS=0 --causal 1 \
  --head-dims "${FK_AB_HDIMS:-64,128,256}" --seqlens "${FK_AB_SEQLENS:-512,1024,2048,4096}"
