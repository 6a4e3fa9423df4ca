"""Causal grouped-query attention with flashkit, checked against a NumPy softmax.

    python examples/python/attention.py          # NumPy on the CPU backend
    python examples/python/attention.py --torch  # torch tensors (CUDA if available)
"""

import sys

import numpy as np

import flashkit

batch, seqlen, nheads, nheads_kv, head_dim = 2, 256, 8, 2, 64
rng = np.random.default_rng(0)
q = rng.standard_normal((batch, seqlen, nheads, head_dim), dtype=np.float32)
k = rng.standard_normal((batch, seqlen, nheads_kv, head_dim), dtype=np.float32)
v = rng.standard_normal((batch, seqlen, nheads_kv, head_dim), dtype=np.float32)

if "--torch" in sys.argv:
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    q, k, v = (torch.from_numpy(t).to(device, torch.bfloat16) for t in (q, k, v))

# out: (batch, seqlen, nheads, head_dim) in q's library; lse: (batch, nheads, seqlen), fp32
out, lse = flashkit.attention(q, k, v, causal=True, return_lse=True)
print(f"out {tuple(out.shape)} {out.dtype}, lse {tuple(lse.shape)}")
print("kernel:", flashkit.default_context("cpu" if isinstance(q, np.ndarray) else
                                          str(q.device)).select_kernel("attention", q, k, v,
                                                                       causal=True))

if isinstance(q, np.ndarray):
    # the same thing the slow way, for one head
    h, kh = 5, 5 // (nheads // nheads_kv)
    s = q[0, :, h] @ k[0, :, kh].T / np.sqrt(head_dim)
    s[np.triu_indices(seqlen, 1)] = -np.inf
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v[0, :, kh]
    err = float(np.abs(out[0, :, h] - ref).max())
    print("max |flashkit - numpy| for one head:", err)
    assert err < 1e-4, err

# FlashAttention 2 code runs unchanged with this import:
from flashkit.flash_attn_interface import flash_attn_func  # noqa: E402

out2 = flash_attn_func(q, k, v, causal=True)
print("flash_attn_func agrees:", float(abs(out2 - out).max()) == 0.0)
