#!/usr/bin/env python3
"""One attention cell of the standard grid (bf16, batch x seqlen = 16384, nheads x head_dim =
2048, (B, S, H, D) inputs as benchmarks/attention.py makes them), run by one backend: flashkit
(--which fk, the Hopper family), torch SDPA's cuDNN or flash (FA2) backend. Two warm-up calls,
then --reps calls inside an NVTX range "prof", for Nsight Compute's --nvtx-include "prof/".
Used by benchmarks/ab/attn_ncu_device.sh."""
import argparse
import os
import sys

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import attention  # noqa: E402
import fkbench  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--which", choices=["fk", "cudnn", "fa2"], required=True)
ap.add_argument("--d", type=int, required=True)
ap.add_argument("--s", type=int, required=True)
ap.add_argument("--causal", type=int, default=0)
ap.add_argument("--reps", type=int, default=1)
a = ap.parse_args()
torch.manual_seed(0)
B, H = 16384 // a.s, 2048 // a.d
q, k, v = (torch.randn(B, a.s, H, a.d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
if a.which == "fk":
    out = torch.empty_like(q)
    lse = torch.empty(B, H, a.s, device="cuda", dtype=torch.float32)
    run = attention.Flashkit(a.lib, "sm90").prepare(q, k, v, out, lse, bool(a.causal))
else:
    be = SDPBackend.CUDNN_ATTENTION if a.which == "cudnn" else SDPBackend.FLASH_ATTENTION
    run = attention.sdpa_fn(be, q, k, v, bool(a.causal))
fkbench.nvtx_profile(run, a.reps)
print(f"{a.which} d {a.d} S {a.s} causal {a.causal}: ok")
