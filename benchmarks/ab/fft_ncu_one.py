#!/usr/bin/env python3
"""One FFT-convolution call of benchmarks/fftconv.py's grid (bf16, causal, fft_size 2L, D, no
gates, constant-filter plan): two warm-up calls, then --reps calls inside the NVTX range "prof"
for Nsight Compute's --nvtx-include "prof/". Used by benchmarks/ab/fft_ncu_device.sh."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fftconv  # noqa: E402
import fkbench  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--B", type=int, default=64)
ap.add_argument("--H", type=int, default=768)
ap.add_argument("--L", type=int, required=True)
ap.add_argument("--reps", type=int, default=1)
a = ap.parse_args()
torch.manual_seed(0)
fk = fftconv.Flashkit(a.lib)
u = torch.randn(a.B, a.H, a.L, device="cuda").mul(0.02).to(torch.bfloat16)
y = torch.empty_like(u)
k = torch.randn(a.H, a.L, device="cuda") * 0.02
D = torch.randn(a.H, device="cuda")
plan = fk.plan(a.H, a.L, 2 * a.L, torch.bfloat16, True)
call, variant = fk.make_call(plan, u, k, D, None, None, y)
fkbench.nvtx_profile(call, a.reps)
print(f"L {a.L} B {a.B} H {a.H}: {variant}")
