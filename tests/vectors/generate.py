#!/usr/bin/env python3
"""Generates flashkit's shared test vectors (tests/vectors/*.fkv and MANIFEST).

Every language suite (C++, Python, Java, Rust) loads these files and checks that the library
reproduces the expected outputs, which proves the bindings agree with each other and with C.

The expected outputs come from the float64 reference implementations below. They are written
from the definitions in include/flashkit/flashkit.h alone (direct sums, no FFT, no online
softmax) and share no code with src/ or tests/reference/.

Inputs are drawn with a fixed seed and rounded to float32, so each value is exactly representable
in fp32; they are stored as float64 and every suite feeds them to the library as fp32.

Usage:
    python3 tests/vectors/generate.py            # rewrite the files beside this script
    python3 tests/vectors/generate.py --check    # exit 1 if the committed files are stale
    python3 tests/vectors/generate.py --out DIR  # write somewhere else

The file format is described in tests/vectors/README.md (and by write_fkv() below).
"""

import argparse
import io
import math
import os
import struct
import sys

import numpy as np

# Bump the digit when the byte layout changes; readers refuse other magics.
MAGIC = b"FKV1"
DTYPE_F64 = 0
DTYPE_I32 = 1

# One seed for the whole set; each case derives its own stream from it and its name, so adding a
# case never changes the others.
SEED = 20240604


# ---------------------------------------------------------------------------------------------
# File format
# ---------------------------------------------------------------------------------------------

def write_fkv(arrays):
    """Serialises an ordered list of (name, ndarray) pairs into FKV1 bytes.

    Layout, little-endian, no padding anywhere:
      magic "FKV1" | u32 count | count x (u16 name_len | name ASCII | u8 dtype | u8 rank |
      i64 shape[rank] | data row-major (f64 or i32))
    """
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(struct.pack("<I", len(arrays)))
    for name, arr in arrays:
        arr = np.asarray(arr)
        if arr.dtype == np.float64:
            code, le = DTYPE_F64, "<f8"
        elif arr.dtype == np.int32:
            code, le = DTYPE_I32, "<i4"
        else:
            raise TypeError(f"{name}: dtype {arr.dtype} is neither float64 nor int32")
        raw = name.encode("ascii")
        buf.write(struct.pack("<H", len(raw)))
        buf.write(raw)
        buf.write(struct.pack("<BB", code, arr.ndim))
        for extent in arr.shape:
            buf.write(struct.pack("<q", extent))
        buf.write(np.ascontiguousarray(arr, dtype=le).tobytes())
    return buf.getvalue()


def read_fkv(data):
    """Parses FKV1 bytes back into a dict name -> ndarray (used by --check and as a model)."""
    if data[:4] != MAGIC:
        raise ValueError("not an FKV1 file")
    (count,) = struct.unpack_from("<I", data, 4)
    pos = 8
    out = {}
    for _ in range(count):
        (nlen,) = struct.unpack_from("<H", data, pos)
        pos += 2
        name = data[pos:pos + nlen].decode("ascii")
        pos += nlen
        code, rank = struct.unpack_from("<BB", data, pos)
        pos += 2
        shape = struct.unpack_from(f"<{rank}q", data, pos)
        pos += 8 * rank
        dt = {DTYPE_F64: "<f8", DTYPE_I32: "<i4"}[code]
        n = int(np.prod(shape, dtype=np.int64)) if rank else 1
        arr = np.frombuffer(data, dtype=dt, count=n, offset=pos).reshape(shape)
        pos += n * arr.itemsize
        out[name] = arr
    if pos != len(data):
        raise ValueError("trailing bytes")
    return out


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def case_rng(case):
    # A stable per-case stream: the seed mixed with the bytes of the case's name.
    return np.random.default_rng([SEED] + list(case.encode("ascii")))


def fp32_normal(rng, shape, scale=1.0):
    """Normal values rounded to fp32 (exactly representable there), returned as float64."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def fp32_uniform(rng, shape, lo, hi):
    return rng.uniform(lo, hi, shape).astype(np.float32).astype(np.float64)


def f64(x):
    """A float parameter as a rank-0 float64 array; asserts it is exact in fp32."""
    v = np.float64(x)
    assert np.float64(np.float32(v)) == v, f"{x} is not representable in fp32"
    return np.array(v, dtype=np.float64)


def i32(x):
    return np.array(x, dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# float64 references, from the header's definitions
# ---------------------------------------------------------------------------------------------

def ref_attention_one(q, k, v, scale, causal, wl, wr, softcap):
    """One sequence, all heads. q (lq, H, d), k/v (lk, Hk, d) -> out (lq, H, d), lse (H, lq)."""
    lq, nheads, d = q.shape
    lk, nheads_k, _ = k.shape
    group = nheads // nheads_k
    out = np.zeros((lq, nheads, v.shape[2]))
    lse = np.full((nheads, lq), -np.inf)
    right = 0 if causal else wr
    for h in range(nheads):
        hk = h // group
        for i in range(lq):
            pos = i + lk - lq  # bottom-right alignment
            scores, keys = [], []
            for j in range(lk):
                if wl >= 0 and j < pos - wl:
                    continue
                if right >= 0 and j > pos + right:
                    continue
                s = scale * float(np.dot(q[i, h], k[j, hk]))
                if softcap > 0:
                    s = softcap * math.tanh(s / softcap)
                scores.append(s)
                keys.append(j)
            if not keys:
                continue  # no visible key: out stays 0, lse stays -inf
            m = max(scores)
            p = np.exp(np.array(scores) - m)
            denom = p.sum()
            out[i, h] = (p[:, None] * v[keys, hk]).sum(axis=0) / denom
            lse[h, i] = m + math.log(denom)
    return out, lse


def ref_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def ref_gelu_erf(x):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def ref_gemm(a, b, c, bias, trans_a, trans_b, alpha, beta, activation):
    """Handles rank-2 or rank-3 operands; rank-2 operands broadcast over d's batch."""
    def batched(x):
        return x if x.ndim == 3 else x[None]
    A, B = batched(a), batched(b)
    if trans_a:
        A = np.swapaxes(A, 1, 2)
    if trans_b:
        B = np.swapaxes(B, 1, 2)
    nb = max(A.shape[0], B.shape[0], batched(c).shape[0] if c is not None else 1)
    m, n = A.shape[1], B.shape[2]
    t = np.zeros((nb, m, n))
    for i in range(nb):
        Ai = A[i if A.shape[0] > 1 else 0]
        Bi = B[i if B.shape[0] > 1 else 0]
        acc = np.zeros((m, n))
        for kk in range(Ai.shape[1]):  # explicit sum over K, so K = 0 gives zeros
            acc += np.outer(Ai[:, kk], Bi[kk, :])
        t[i] = alpha * acc
        if beta != 0:
            C = batched(c)
            t[i] += beta * C[i if C.shape[0] > 1 else 0]
        if bias is not None:
            t[i] += bias[None, :]
    if activation == 1:
        t = np.maximum(t, 0.0)
    elif activation == 2:
        t = ref_gelu_tanh(t)
    elif activation == 3:
        t = ref_gelu_erf(t)
    rank = max(a.ndim, b.ndim, c.ndim if c is not None else 2)
    return t if rank == 3 else t[0]


def ref_monarch(x, w1, w2, bias):
    tokens = x.shape[0]
    nb1, q, p = w1.shape
    nb2, s, r = w2.shape
    y1 = np.zeros((tokens, nb1 * q))
    for i in range(nb1):
        for a in range(q):
            for c in range(p):
                y1[:, i * q + a] += w1[i, a, c] * x[:, i * p + c]
    z = np.zeros((tokens, nb2, r))
    for j in range(nb2):
        for b in range(r):
            z[:, j, b] = y1[:, b * nb2 + j]
    out = np.zeros((tokens, nb2 * s))
    for j in range(nb2):
        for m in range(s):
            for b in range(r):
                out[:, m * nb2 + j] += w2[j, m, b] * z[:, j, b]
    if bias is not None:
        out += bias[None, :]
    return out


def ref_blockdiag(x, w, bias):
    tokens = x.shape[0]
    nb, q, p = w.shape
    out = np.zeros((tokens, nb * q))
    for i in range(nb):
        for a in range(q):
            for c in range(p):
                out[:, i * q + a] += w[i, a, c] * x[:, i * p + c]
    if bias is not None:
        out += bias[None, :]
    return out


def ref_fftconv(u, k, D, pregate, postgate, mode, fft_size):
    """Direct sums of the header's three definitions (no FFT)."""
    batch, channels, seqlen = u.shape
    flen = k.shape[1]
    v = u * pregate if pregate is not None else u.copy()
    conv = np.zeros_like(v)
    for bb in range(batch):
        for c in range(channels):
            for t in range(seqlen):
                acc = 0.0
                if mode == 0:  # causal
                    for s in range(min(t, flen - 1) + 1):
                        acc += k[c, s] * v[bb, c, t - s]
                elif mode == 1:  # circular, v and k zero-padded to fft_size
                    for s in range(flen):
                        idx = (t - s) % fft_size
                        if idx < seqlen:
                            acc += k[c, s] * v[bb, c, idx]
                else:  # bidirectional, centred
                    R = (flen - 1) // 2
                    for j in range(-R, R + 1):
                        if 0 <= t - j < seqlen:
                            acc += k[c, R + j] * v[bb, c, t - j]
                conv[bb, c, t] = acc
    y = conv
    if D is not None:
        y = y + D[None, :, None] * v
    if postgate is not None:
        y = y * postgate
    return y


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def attention_params(causal=0, softmax_scale=None, window_left=-1, window_right=-1, softcap=0.0,
                     head_dim=None):
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    return [("causal", i32(causal)), ("softmax_scale", f64(scale)),
            ("window_left", i32(window_left)), ("window_right", i32(window_right)),
            ("softcap", f64(softcap))]


def case_attention_gqa_causal_varlen(name):
    rng = case_rng(name)
    nheads, nheads_k, d = 4, 2, 16
    # Sequence 1 is empty; sequence 3 has more queries than keys (its first rows see no key
    # under the bottom-right causal mask: out 0, lse -inf); sequence 4 has no keys at all.
    lens_q = [5, 0, 7, 4, 2]
    lens_k = [6, 0, 9, 2, 0]
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    q = fp32_normal(rng, (cu_q[-1], nheads, d))
    k = fp32_normal(rng, (cu_k[-1], nheads_k, d))
    v = fp32_normal(rng, (cu_k[-1], nheads_k, d))
    params = attention_params(causal=1, head_dim=d)  # scale 1/sqrt(16) = 0.25, exact
    scale = float(params[1][1])
    out = np.zeros(q.shape)
    lse = np.full((nheads, cu_q[-1]), -np.inf)
    for b in range(len(lens_q)):
        qs, qe, ks, ke = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        o, l = ref_attention_one(q[qs:qe], k[ks:ke], v[ks:ke], scale, True, -1, -1, 0.0)
        out[qs:qe] = o
        lse[:, qs:qe] = l
    return params + [("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_q),
                     ("cu_seqlens_k", cu_k), ("out", out), ("lse", lse)]


def case_attention_batched_window_softcap(name):
    rng = case_rng(name)
    batch, sq, sk, nheads, nheads_k, d = 2, 6, 10, 3, 1, 8
    q = fp32_normal(rng, (batch, sq, nheads, d))
    k = fp32_normal(rng, (batch, sk, nheads_k, d))
    v = fp32_normal(rng, (batch, sk, nheads_k, d))
    # Scale 1.5 makes many scores exceed the cap of 2, so the tanh visibly matters.
    params = attention_params(causal=0, softmax_scale=1.5, window_left=3, window_right=1,
                              softcap=2.0)
    out = np.zeros(q.shape)
    lse = np.zeros((batch, nheads, sq))
    for b in range(batch):
        o, l = ref_attention_one(q[b], k[b], v[b], 1.5, False, 3, 1, 2.0)
        out[b] = o
        lse[b] = l
    return params + [("q", q), ("k", k), ("v", v), ("out", out), ("lse", lse)]


def gemm_params(trans_a=0, trans_b=0, alpha=1.0, beta=0.0, activation=0):
    return [("trans_a", i32(trans_a)), ("trans_b", i32(trans_b)), ("alpha", f64(alpha)),
            ("beta", f64(beta)), ("activation", i32(activation))]


def case_gemm_bias_gelu(name):
    rng = case_rng(name)
    m, n, kk = 7, 12, 9
    a = fp32_normal(rng, (m, kk))
    b = fp32_normal(rng, (n, kk))  # trans_b: stored (N, K)
    bias = fp32_normal(rng, (n,))
    params = gemm_params(trans_b=1, alpha=0.5, activation=2)
    d = ref_gemm(a, b, None, bias, 0, 1, 0.5, 0.0, 2)
    return params + [("a", a), ("b", b), ("bias", bias), ("d", d)]


def case_gemm_batched_beta(name):
    rng = case_rng(name)
    batch, m, n, kk = 3, 5, 6, 4
    a = fp32_normal(rng, (batch, kk, m))  # trans_a: stored (batch, K, M)
    b = fp32_normal(rng, (kk, n))         # rank 2: broadcast to every batch
    c = fp32_normal(rng, (batch, m, n))
    params = gemm_params(trans_a=1, alpha=0.75, beta=0.5, activation=3)
    d = ref_gemm(a, b, c, None, 1, 0, 0.75, 0.5, 3)
    return params + [("a", a), ("b", b), ("c", c), ("d", d)]


def case_gemm_k0_relu(name):
    # K = 0: the header defines d = epilogue(beta * c + bias), never untouched memory.
    rng = case_rng(name)
    m, n = 3, 4
    a = np.zeros((m, 0))
    b = np.zeros((0, n))
    c = fp32_normal(rng, (m, n))
    bias = fp32_normal(rng, (n,))
    params = gemm_params(beta=1.0, activation=1)
    d = ref_gemm(a, b, c, bias, 0, 0, 1.0, 1.0, 1)
    return params + [("a", a), ("b", b), ("c", c), ("bias", bias), ("d", d)]


def case_monarch_rect(name):
    rng = case_rng(name)
    tokens = 5
    nb1, q, p = 4, 6, 3      # R: 4 blocks of (6 out x 3 in); n = 12
    nb2, s, r = 3, 5, 8      # L: 3 blocks of (5 out x 8 in); nb1 * q = 24 = nb2 * r
    x = fp32_normal(rng, (tokens, nb1 * p))
    w1 = fp32_normal(rng, (nb1, q, p), 0.5)
    w2 = fp32_normal(rng, (nb2, s, r), 0.5)
    bias = fp32_normal(rng, (nb2 * s,))
    out = ref_monarch(x, w1, w2, bias)
    return [("x", x), ("w1", w1), ("w2", w2), ("bias", bias), ("out", out)]


def case_blockdiag_bias(name):
    rng = case_rng(name)
    tokens, nb, q, p = 6, 3, 5, 4
    x = fp32_normal(rng, (tokens, nb * p))
    w = fp32_normal(rng, (nb, q, p), 0.5)
    bias = fp32_normal(rng, (nb * q,))
    out = ref_blockdiag(x, w, bias)
    return [("x", x), ("w", w), ("bias", bias), ("out", out)]


def fftconv_case(name, mode, batch, channels, seqlen, filter_len, fft_size, with_d, with_gates):
    rng = case_rng(name)
    u = fp32_normal(rng, (batch, channels, seqlen))
    k = fp32_normal(rng, (channels, filter_len), 1.0 / math.sqrt(filter_len))
    arrays = [("mode", i32(mode)), ("fft_size", i32(fft_size)), ("u", u), ("k", k)]
    D = pre = post = None
    if with_d:
        D = fp32_normal(rng, (channels,))
        arrays.append(("D", D))
    if with_gates:
        pre = fp32_uniform(rng, (batch, channels, seqlen), -1.0, 1.0)
        post = fp32_uniform(rng, (batch, channels, seqlen), -1.0, 1.0)
        arrays += [("pregate", pre), ("postgate", post)]
    y = ref_fftconv(u, k, D, pre, post, mode, fft_size)
    return arrays + [("y", y)]


def case_fftconv_causal(name):
    # filter shorter than the sequence; fft_size 0 lets the plan pick (>= 20 + 12 - 1 -> 32).
    return fftconv_case(name, 0, 2, 3, 20, 12, 0, with_d=True, with_gates=True)


def case_fftconv_circular(name):
    # seqlen 12 and 10 taps wrapped modulo 16: outputs 0..8 receive wrapped terms.
    return fftconv_case(name, 1, 2, 2, 12, 10, 16, with_d=False, with_gates=False)


def case_fftconv_bidirectional(name):
    # 7 taps centred (R = 3); explicit fft_size 32 >= 16 + 3.
    return fftconv_case(name, 2, 1, 3, 16, 7, 32, with_d=True, with_gates=False)


CASES = [
    ("attention_gqa_causal_varlen", "attention", case_attention_gqa_causal_varlen),
    ("attention_batched_window_softcap", "attention", case_attention_batched_window_softcap),
    ("gemm_bias_gelu", "gemm", case_gemm_bias_gelu),
    ("gemm_batched_beta", "gemm", case_gemm_batched_beta),
    ("gemm_k0_relu", "gemm", case_gemm_k0_relu),
    ("monarch_rect", "monarch", case_monarch_rect),
    ("blockdiag_bias", "blockdiag", case_blockdiag_bias),
    ("fftconv_causal", "fftconv", case_fftconv_causal),
    ("fftconv_circular", "fftconv", case_fftconv_circular),
    ("fftconv_bidirectional", "fftconv", case_fftconv_bidirectional),
]


def build():
    """Returns {file name: bytes} for the whole set."""
    files = {}
    manifest = []
    for case, op, fn in CASES:
        arrays = fn(case)
        names = [n for n, _ in arrays]
        assert len(names) == len(set(names)), f"{case}: duplicate array names"
        files[case + ".fkv"] = write_fkv(arrays)
        read_fkv(files[case + ".fkv"])  # round-trip sanity
        manifest.append(f"{case} {op}\n")
    files["MANIFEST"] = "".join(manifest).encode("ascii")
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=here, help="output folder (default: beside this script)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in --out instead of writing; exit 1 if stale")
    args = ap.parse_args()
    files = build()
    total = sum(len(v) for v in files.values())
    assert total < 200 * 1024, f"vector set is {total} bytes, keep it under 200 KB"
    if args.check:
        stale = []
        for fname, data in files.items():
            path = os.path.join(args.out, fname)
            if not os.path.exists(path):
                stale.append(fname + " (missing)")
                continue
            with open(path, "rb") as f:
                old = f.read()
            if old == data:
                continue
            # Inputs must be identical; outputs may differ in the last bits across libm builds.
            if fname == "MANIFEST":
                stale.append(fname)
                continue
            a, b = read_fkv(old), read_fkv(data)
            if a.keys() != b.keys() or any(
                    a[n].shape != b[n].shape or a[n].dtype != b[n].dtype or
                    not np.allclose(a[n], b[n], rtol=1e-12, atol=1e-12, equal_nan=True)
                    for n in a):
                stale.append(fname)
        if stale:
            print("stale test vectors (run tests/vectors/generate.py):", ", ".join(stale))
            return 1
        print(f"test vectors up to date ({len(files) - 1} cases, {total} bytes)")
        return 0
    os.makedirs(args.out, exist_ok=True)
    for fname, data in files.items():
        with open(os.path.join(args.out, fname), "wb") as f:
            f.write(data)
    print(f"wrote {len(files) - 1} cases and MANIFEST to {args.out} ({total} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
