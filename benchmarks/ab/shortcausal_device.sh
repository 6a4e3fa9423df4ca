#!/usr/bin/env bash
# Session 35: the short causal cells (issue 6's worst: head_dim 64 causal 512 at 0.79x cuDNN)
# under the Hopper kernel's existing runtime switches, on main bb91f3c's library (.device):
# A = defaults, W = FLASHKIT_SM90_ATTENTION_WG3=2 (192-row tiles also in short masked calls),
# O = OVERLAP=0 (plain S / softmax / P V order), P = PINGPONG=0, S = SECTIONS=0. One process
# per run, order A W O P S S P O W A; benchmarks/attention.py --family sm90 --causal 1
# --seqlens 512,1024,2048 --no-extra --reps 10 --warmup 3.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# .device/bin/flashkit_tests_cpu; carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
export AB_LIB_A=.device/lib/libflashkit.so
export AB_ENV_W="FLASHKIT_SM90_ATTENTION_WG3=2" AB_ENV_O="FLASHKIT_SM90_ATTENTION_OVERLAP=0"
export AB_ENV_P="FLASHKIT_SM90_ATTENTION_PINGPONG=0" AB_ENV_S="FLASHKIT_SM90_ATTENTION_SECTIONS=0"
attn_ab "A W O P S S P O W A" --family sm90 --causal 1 --seqlens ${FK_SC_SEQLENS:-512,1024,2048} \
  --head-dims ${FK_SC_HDIMS:-64,128,256} --no-extra --reps 10 --warmup 3
