"""The shared test vectors (tests/vectors/, format in its README) through the Python API.

The C++, Java and Rust suites check the same files, so the four languages are proven to compute
the same thing through the same C ABI. Inputs are exact in fp32; expected outputs are float64.
"""
import os
import struct

import numpy as np
import pytest

import flashkit

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors")
MODES = {0: "causal", 1: "circular", 2: "bidirectional"}


def read_fkv(path):
    """A reader written from the README's format table (not shared with generate.py)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"FKV1", f"{path}: bad magic"
    (count,) = struct.unpack_from("<I", data, 4)
    pos, arrays = 8, {}
    for _ in range(count):
        (nlen,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2:pos + 2 + nlen].decode("ascii")
        pos += 2 + nlen
        code, rank = struct.unpack_from("<BB", data, pos)
        pos += 2
        shape = struct.unpack_from(f"<{rank}q", data, pos)
        pos += 8 * rank
        dtype = np.dtype("<f8") if code == 0 else np.dtype("<i4")
        n = int(np.prod(shape)) if rank else 1
        arrays[name] = np.frombuffer(data, dtype, n, pos).reshape(shape).copy()
        pos += n * dtype.itemsize
    assert pos == len(data), f"{path}: trailing bytes"
    return arrays


def cases():
    with open(os.path.join(VECTORS, "MANIFEST")) as f:
        lines = [l.split() for l in f if l.strip() and not l.startswith("#")]
    return [(name, op) for name, op in lines]


def f32(a):
    return None if a is None else np.ascontiguousarray(a, dtype=np.float32)


def check(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), f"{what}: infinities differ"
    err = np.abs(got[~inf] - want[~inf])
    bound = 1e-4 + 1e-4 * np.abs(want[~inf])
    assert np.all(err <= bound), f"{what}: max error {err.max()} at {np.argmax(err - bound)}"


@pytest.mark.parametrize("name,op", cases())
def test_shared_vector(name, op):
    v = read_fkv(os.path.join(VECTORS, name + ".fkv"))
    ctx = flashkit.Context("cpu")
    scalar = lambda key: v[key].item()
    if op == "attention":
        out, lse = flashkit.attention(
            f32(v["q"]), f32(v["k"]), f32(v["v"]), softmax_scale=scalar("softmax_scale"),
            causal=bool(scalar("causal")),
            window_size=(int(scalar("window_left")), int(scalar("window_right"))),
            softcap=scalar("softcap"), cu_seqlens_q=v.get("cu_seqlens_q"),
            cu_seqlens_k=v.get("cu_seqlens_k"), return_lse=True)
        check(out, v["out"], name + " out")
        check(lse, v["lse"], name + " lse")
    elif op == "gemm":
        d = flashkit.gemm(f32(v["a"]), f32(v["b"]), f32(v.get("c")), alpha=scalar("alpha"),
                          beta=scalar("beta"), trans_a=bool(scalar("trans_a")),
                          trans_b=bool(scalar("trans_b")), bias=f32(v.get("bias")),
                          activation=int(scalar("activation")))
        check(d, v["d"], name + " d")
    elif op == "monarch":
        out = flashkit.monarch(f32(v["x"]), f32(v["w1"]), f32(v["w2"]), bias=f32(v.get("bias")))
        check(out, v["out"], name + " out")
    elif op == "blockdiag":
        out = flashkit.blockdiag_linear(f32(v["x"]), f32(v["w"]), bias=f32(v.get("bias")))
        check(out, v["out"], name + " out")
    elif op == "fftconv":
        fft_size = int(scalar("fft_size")) or None
        conv = flashkit.FFTConv(v["u"].shape[2], fft_size=fft_size, mode=MODES[int(scalar("mode"))],
                                dtype=np.float32)
        y = conv.run(ctx, f32(v["u"]), f32(v["k"]), f32(v.get("D")), f32(v.get("pregate")),
                     f32(v.get("postgate")))
        check(y, v["y"], name + " y")
    else:
        pytest.fail(f"unknown op {op!r} in MANIFEST")
