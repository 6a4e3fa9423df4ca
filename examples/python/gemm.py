"""A transformer MLP block, gelu(x W1 + b1) W2 + b2, as two flashkit GEMMs with fused epilogues.

    python examples/python/gemm.py
"""

import math

import numpy as np

import flashkit

try:
    from ml_dtypes import bfloat16  # NumPy bf16
except ImportError:
    bfloat16 = np.float32

tokens, d_model, d_ff = 128, 256, 1024
rng = np.random.default_rng(0)
x = rng.standard_normal((tokens, d_model)).astype(bfloat16)
w1 = (rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)).astype(bfloat16)
b1 = rng.standard_normal(d_ff).astype(np.float32)
# nn.Linear stores weights (out_features, in_features): use it transposed, no copy needed
w2 = (rng.standard_normal((d_model, d_ff)) / np.sqrt(d_ff)).astype(bfloat16)
b2 = rng.standard_normal(d_model).astype(np.float32)

h = flashkit.gemm(x, w1, bias=b1, activation="gelu")      # (tokens, d_ff), bf16
y = flashkit.gemm(h, w2, bias=b2, trans_b=True)            # (tokens, d_model), bf16
print("y:", y.shape, y.dtype)

# residual update in place: out = 1.0 * (h @ w2^T) + 1.0 * x  (c=x, beta=1), written into x32
x32 = x.astype(np.float32)
flashkit.gemm(h.astype(np.float32), w2.astype(np.float32), x32, beta=1.0, trans_b=True,
              out=x32)
print("residual:", x32.shape, x32.dtype)

ref = x.astype(np.float64) @ w1.astype(np.float64) + b1
ref = 0.5 * ref * (1 + np.vectorize(math.erf)(ref / np.sqrt(2)))
print("max |h - reference| (bf16 output):", np.abs(h.astype(np.float64) - ref).max())
