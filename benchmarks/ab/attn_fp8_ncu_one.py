#!/usr/bin/env python3
"""One cell of benchmarks/attention_fp8.py (batch x seqlen = 16384, nheads x head_dim = 2048),
run once inside an NVTX range "prof" for Nsight Compute's --nvtx-include "prof/": the fp8 call
(--which fp8: cuda.sm90.attention_fp8, with its V^T pass until session 43 moved the
transposition into the kernel) or flashkit's bf16 call on the same dequantised values (--which
bf16). Used by benchmarks/ab/attn_fp8_ncu_device.sh (session 41)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fkbench  # noqa: E402
from attention_fp8 import Flashkit  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--which", choices=["fp8", "bf16"], required=True)
ap.add_argument("--s", type=int, default=8192)
ap.add_argument("--causal", type=int, default=0)
ap.add_argument("--head-dim", type=int, default=128, help="128 (16 heads) or 256 (8 heads)")
a = ap.parse_args()
d = a.head_dim
h = 2048 // d
b = 16384 // a.s
g = torch.Generator(device="cuda").manual_seed(a.s)
q8, k8, v8 = ((torch.randn(b, a.s, h, d, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
              for _ in range(3))
dsc = [torch.rand(b, h, device="cuda", generator=g) * 0.5 + 0.05 for _ in range(3)]
out = torch.empty(b, a.s, h, d, device="cuda", dtype=torch.bfloat16)
lse = torch.empty(b, h, a.s, device="cuda", dtype=torch.float32)
fk = Flashkit(a.lib, "auto")
if a.which == "fp8":
    run = fk.run_fn("fk_attention_fp8_forward", "fk_attention_fp8_select_kernel",
                    (q8, k8, v8, *dsc, None, None, out, lse), bool(a.causal))
else:
    qb, kb, vb = (x.float().mul(ds[:, None, :, None]).to(torch.bfloat16)
                  for x, ds in zip((q8, k8, v8), dsc))
    run = fk.run_fn("fk_attention_forward", "fk_attention_select_kernel",
                    (qb, kb, vb, None, None, out, lse), bool(a.causal))
fkbench.nvtx_profile(run, 1)
print(f"{a.which} S {a.s} causal {a.causal}: {run.variant} ok")
