"""Plain float64 NumPy references for every flashkit operation (the oracle of the Python suite).

Written from the header's definitions (include/flashkit/flashkit.h), independent of the CPU
backend: direct loops and dense matrices, no FFTs, no blocking.
"""

import math

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

DTYPES = ["float32", "float16", "bfloat16"]

# Max error allowed relative to max(1, max|reference|): a few units of the output dtype's
# rounding (the CPU backend accumulates in fp32 and rounds once).
TOLERANCE = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def np_dtype(name):
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def randn(rng, shape, dtype="float32", scale=1.0):
    """Fresh random normal values (never zeros), rounded to ``dtype``."""
    return (rng.standard_normal(shape) * scale).astype(np_dtype(dtype))


def f64(x):
    return np.asarray(x).astype(np.float64)


def assert_close(actual, expected, dtype, factor=1.0, what=""):
    actual = f64(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(actual), finite), f"{what}: non-finite pattern differs"
    if not finite.all():
        assert np.array_equal(actual[~finite], expected[~finite]), f"{what}: inf values differ"
    if not finite.any():
        return
    err = np.abs(actual[finite] - expected[finite]).max()
    scale = max(1.0, np.abs(expected[finite]).max())
    tol = TOLERANCE[dtype] * factor * scale
    assert err <= tol, f"{what}: max error {err:.3g} > {tol:.3g} ({dtype})"


# ------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------

def _attention_one(q, k, v, scale, causal, window, softcap, round_p=None):
    """q (Lq, H, D), k/v (Lk, Hk, D) float64 -> out (Lq, H, D), lse (H, Lq). round_p: the values
    P = exp(s - rowmax) take in the P V product (the row sums keep the exact P), e.g. P rounded
    to e4m3 as the fp8 kernel does; None: exact."""
    lq, h, d = q.shape
    lk, hk = k.shape[0], k.shape[1]
    group = h // hk
    left, right = window
    if causal:
        right = 0
    left = math.inf if left < 0 else left
    right = math.inf if right < 0 else right
    pos = np.arange(lq)[:, None] + (lk - lq)
    j = np.arange(lk)[None, :]
    allowed = (j >= pos - left) & (j <= pos + right)
    out = np.zeros((lq, h, v.shape[2]))
    lse = np.full((h, lq), -np.inf)
    for head in range(h):
        kh = head // group
        s = scale * (q[:, head, :] @ k[:, kh, :].T)
        if softcap > 0:
            s = softcap * np.tanh(s / softcap)
        s = np.where(allowed, s, -np.inf)
        m = s.max(axis=1, keepdims=True) if lk else np.full((lq, 1), -np.inf)
        seen = np.isfinite(m[:, 0])
        m_safe = np.where(np.isfinite(m), m, 0.0)
        p = np.exp(s - m_safe)
        denom = p.sum(axis=1)
        with np.errstate(divide="ignore"):
            lse[head] = np.where(seen, np.log(np.where(seen, denom, 1.0)) + m_safe[:, 0], -np.inf)
        pv = p if round_p is None else round_p(p)
        w = np.where(seen[:, None], pv / np.where(seen, denom, 1.0)[:, None], 0.0)
        out[:, head, :] = w @ v[:, kh, :]
    return out, lse


def attention(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
              cu_seqlens_q=None, cu_seqlens_k=None, round_p=None):
    """Reference attention; returns (out, lse) in flashkit's layouts, float64 (round_p: see
    _attention_one)."""
    q, k, v = f64(q), f64(k), f64(v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else softmax_scale
    if cu_seqlens_q is None:
        b = q.shape[0]
        outs, lses = [], []
        for i in range(b):
            o, l = _attention_one(q[i], k[i], v[i], scale, causal, window_size, softcap, round_p)
            outs.append(o)
            lses.append(l)
        return np.stack(outs), np.stack(lses)
    cq, ck = np.asarray(cu_seqlens_q), np.asarray(cu_seqlens_k)
    out = np.zeros(q.shape[:2] + (v.shape[2],))
    lse = np.full((q.shape[1], q.shape[0]), -np.inf)
    for i in range(len(cq) - 1):
        qs, qe, ks, ke = cq[i], cq[i + 1], ck[i], ck[i + 1]
        o, l = _attention_one(q[qs:qe], k[ks:ke], v[ks:ke], scale, causal, window_size, softcap,
                              round_p)
        out[qs:qe] = o
        lse[:, qs:qe] = l
    return out, lse



def kvcache_gather(k_cache, v_cache, cache_seqlens, block_table, b):
    """Sequence ``b``'s keys and values (its first ``cache_seqlens[b]`` rows) of a contiguous or
    paged cache, gathered one key at a time: key ``n`` is row ``n % page_block_size`` of page
    ``block_table[b][n // page_block_size]`` (vLLM's PagedAttention layout)."""
    if block_table is None:
        capacity = k_cache.shape[1]
    else:
        capacity = np.asarray(block_table).shape[1] * k_cache.shape[1]
    n = capacity if cache_seqlens is None else int(np.asarray(cache_seqlens)[b])
    if block_table is None:
        return k_cache[b, :n], v_cache[b, :n]
    page = k_cache.shape[1]
    table = np.asarray(block_table)
    ks = np.stack([k_cache[table[b, i // page], i % page] for i in range(n)]) if n else \
        np.zeros((0,) + k_cache.shape[2:])
    vs = np.stack([v_cache[table[b, i // page], i % page] for i in range(n)]) if n else \
        np.zeros((0,) + v_cache.shape[2:])
    return ks, vs


def attention_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None,
                      softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0):
    """Reference of fk_attention_kvcache_forward: per sequence, batched attention of q[b] over
    its gathered cache (masks bottom-right aligned to cache_seqlens[b]); (out, lse), float64."""
    q, k_cache, v_cache = f64(q), f64(k_cache), f64(v_cache)
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else softmax_scale
    outs, lses = [], []
    for b in range(q.shape[0]):
        k, v = kvcache_gather(k_cache, v_cache, cache_seqlens, block_table, b)
        o, l = _attention_one(q[b], k, v, scale, causal, window_size, softcap)
        outs.append(o)
        lses.append(l)
    return np.stack(outs), np.stack(lses)

# ------------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------------

_erf = np.vectorize(math.erf)


def activation(x, name):
    if name in (None, "none"):
        return x
    if name == "relu":
        return np.maximum(x, 0.0)
    if name in ("gelu", "gelu_erf"):
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(name)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, bias=None,
         act=None):
    a, b = f64(a), f64(b)
    if trans_a:
        a = np.swapaxes(a, -1, -2)
    if trans_b:
        b = np.swapaxes(b, -1, -2)
    t = alpha * np.matmul(a, b)
    if c is not None and beta != 0:
        t = t + beta * f64(c)
    if bias is not None:
        t = t + f64(bias)
    return activation(t, act)


# ------------------------------------------------------------------------------------------
# Monarch / block-diagonal
# ------------------------------------------------------------------------------------------

def blockdiag(x, w, bias=None):
    """out[t, i*q + a] = sum_c w[i, a, c] x[t, i*p + c]."""
    x, w = f64(x), f64(w)
    nb, q, p = w.shape
    xs = x.reshape(x.shape[:-1] + (nb, p))
    out = np.einsum("...ic,iac->...ia", xs, w).reshape(x.shape[:-1] + (nb * q,))
    return out if bias is None else out + f64(bias)


def monarch(x, w1, w2, bias=None):
    """The header's element-for-element definition (m2's blockdiag_butterfly_multiply)."""
    x, w1, w2 = f64(x), f64(w1), f64(w2)
    nb1, q, p = w1.shape
    nb2, s, r = w2.shape
    lead = x.shape[:-1]
    y1 = blockdiag(x, w1)                                    # (..., nb1*q) = (..., r*nb2)
    z = y1.reshape(lead + (r, nb2))                          # y1[t, b*nb2 + j] -> [b, j]
    z = np.swapaxes(z, -1, -2)                               # z[t, j, b]
    out = np.einsum("...jb,jmb->...mj", z, w2)               # out[t, m, j]
    out = out.reshape(lead + (s * nb2,))                     # index m*nb2 + j
    return out if bias is None else out + f64(bias)


# ------------------------------------------------------------------------------------------
# FFT convolution (direct sums)
# ------------------------------------------------------------------------------------------

def fftconv(u, k, D=None, pregate=None, postgate=None, mode="causal", fft_size=None):
    u, k = f64(u), f64(k)
    v = u * f64(pregate) if pregate is not None else u
    bsz, ch, length = v.shape
    flen = k.shape[1]
    y = np.zeros_like(v)
    if mode == "causal":
        for s in range(min(flen, length)):
            y[..., s:] += k[None, :, s, None] * v[..., :length - s]
    elif mode == "circular":
        n = fft_size
        vp = np.zeros((bsz, ch, n))
        vp[..., :length] = v
        for s in range(flen):
            y += k[None, :, s, None] * np.roll(vp, s, axis=-1)[..., :length]
    elif mode == "bidirectional":
        radius = (flen - 1) // 2
        for j in range(-radius, radius + 1):
            # conv[t] += k[R + j] * v[t - j], v zero outside [0, L)
            if j >= 0:
                if j < length:
                    y[..., j:] += k[None, :, radius + j, None] * v[..., :length - j]
            else:
                if -j < length:
                    y[..., :length + j] += k[None, :, radius + j, None] * v[..., -j:]
    else:
        raise ValueError(mode)
    if D is not None:
        y = y + f64(D)[None, :, None] * v
    if postgate is not None:
        y = y * f64(postgate)
    return y
