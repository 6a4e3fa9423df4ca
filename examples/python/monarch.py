"""Monarch matrices: a structured d x d layer with 2 d sqrt(d) parameters instead of d^2.

    python examples/python/monarch.py

Shapes follow the m2 repository's blockdiag_butterfly_multiply(x, w1_bfly, w2_bfly).
"""

import numpy as np

import flashkit

d = 1024
nblocks = int(np.sqrt(d))                       # 32 blocks of 32 x 32
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 128, d), dtype=np.float32)          # (batch, seqlen, d)
w1 = (rng.standard_normal((nblocks,) * 3) / np.sqrt(nblocks)).astype(np.float32)
w2 = (rng.standard_normal((nblocks,) * 3) / np.sqrt(nblocks)).astype(np.float32)

y = flashkit.monarch(x, w1, w2)                 # leading dims are flattened into tokens
print("monarch:", x.shape, "->", y.shape, f"({w1.size + w2.size} parameters vs {d * d})")

# The same operator as a dense matrix: apply it to the identity.
dense = flashkit.monarch(np.eye(d, dtype=np.float32), w1, w2)    # row i = M e_i
print("max |monarch(x) - x M_dense|:", np.abs(y[0] - x[0] @ dense).max())

# M2-BERT's block-diagonal linear layer (4 blocks, 1024 -> 2048 features) with a bias
w = rng.standard_normal((4, 512, 256), dtype=np.float32) / 16
b = np.zeros(2048, np.float32)
print("blockdiag_linear:", flashkit.blockdiag_linear(x, w, bias=b).shape)
