#!/usr/bin/env python3
"""What each GEMM epilogue costs: flashkit bf16 `a @ b` (row-major, random inputs, rotated sets
larger than L2) with no epilogue, ReLU, GELU (tanh), bias, bias + GELU (tanh / erf), against
torch.matmul, torch's unfused `gelu(a @ b + bias, approximate="tanh")` and cuBLASLt's fused
GELU_BIAS (`torch._addmm_activation`, where torch has it), at 8192^3 and 4096^3. The variants are interleaved in 3 rounds (15 calls each after 3 warm-up calls) and the
median round is printed: at 8192^3 the H200 reaches its power cap within a few hundred calls,
so a fixed order would favour whichever variant comes first (benchmarks/RESULTS.md, "GELU
epilogue cost, and what power does to 8192^3").

  LD_LIBRARY_PATH=.device/lib FK_LIB=.device/lib/libflashkit.so TAG=new python3 benchmarks/gemm_epilogues.py
"""
import os, sys, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import gemm as G

lib = os.environ.get("FK_LIB", ".device/lib/libflashkit.so")
fk = G.Flashkit(lib)
tag = os.environ.get("TAG", lib)
for (M, N, K) in [(8192, 8192, 8192), (4096, 4096, 4096)]:
    flops = 2.0 * M * N * K
    sets = G.input_sets(M, N, K, torch.bfloat16, "nn", with_bias=True)
    variants = [("none", False), ("relu", False), ("gelu_tanh", False), ("none", True), ("gelu_tanh", True), ("gelu_erf", True)]
    calls = {}
    for act, bias in variants:
        calls[(act, bias)] = [fk.make_call(a, b, d, bias=(bi if bias else None), act=act)[0] for a, b, bi, d in sets]
    calls[("torch", False)] = [lambda s=s: torch.matmul(s[0], s[1]) for s in sets]
    calls[("torch+bias+gelu", True)] = [lambda s=s: torch.nn.functional.gelu(torch.matmul(s[0], s[1]) + s[2], approximate="tanh") for s in sets]
    if hasattr(torch, "_addmm_activation"):  # cuBLASLt's own fused GELU_BIAS epilogue
        calls[("cublaslt_bias_gelu", True)] = [lambda s=s: torch._addmm_activation(s[2], s[0], s[1], use_gelu=True) for s in sets]
    times = {k: [] for k in calls}
    for r in range(3):
        for k, c in calls.items():
            times[k].append(G.time_calls(c, 3, 15))
    for k, ts in times.items():
        t = statistics.median(ts)
        print(f"{tag} {M}x{N}x{K} {k[0]:16s} bias={int(k[1])} {t*1e3:8.1f} us {flops/t*1e-9:7.1f} TFLOP/s  rounds " + " ".join(f"{x*1e3:.0f}" for x in ts), flush=True)
    del sets, calls
    torch.cuda.empty_cache()
