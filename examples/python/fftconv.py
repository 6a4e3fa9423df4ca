"""Hyena/M2-style long convolutions with flashkit.FFTConv, checked against numpy.fft.

    python examples/python/fftconv.py
"""

import numpy as np

import flashkit

batch, channels, seqlen = 2, 64, 4096
rng = np.random.default_rng(0)
u = rng.standard_normal((batch, channels, seqlen), dtype=np.float32)
k = (rng.standard_normal((channels, seqlen)) * np.exp(-np.arange(seqlen) / 256)).astype(
    np.float32)                                  # a decaying long filter, one per channel
D = rng.standard_normal(channels).astype(np.float32)

causal = flashkit.FFTConv(seqlen)                # fft_size picked: 8192
y = causal(u, k, D=D)
print("causal:", y.shape, "fft_size", causal.resolved_fft_size(channels, seqlen))

n = 2 * seqlen
ref = np.fft.irfft(np.fft.rfft(u, n) * np.fft.rfft(k, n), n)[..., :seqlen] + D[:, None] * u
print("max |flashkit - numpy.fft|:", np.abs(y - ref).max())

# Gated (Hyena): y = post * conv(pre * u, k)
pre, post = (rng.standard_normal(u.shape, dtype=np.float32) for _ in range(2))
print("gated:", causal(u, k, pregate=pre, postgate=post).shape)

# Bidirectional, centred filter of 2R+1 taps (M2-BERT's sequence mixer)
bidir = flashkit.FFTConv(seqlen, mode="bidirectional")
kc = rng.standard_normal((channels, 257)).astype(np.float32) / 16
print("bidirectional:", bidir(u, kc).shape)
