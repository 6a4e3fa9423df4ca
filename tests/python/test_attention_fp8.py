"""flashkit.attention_fp8 (float8 e4m3fn q, k, v with descale factors) on the CPU backend,
against the float64 reference on the dequantised inputs, and its refusals."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref

ml_dtypes = pytest.importorskip("ml_dtypes")
E4M3 = ml_dtypes.float8_e4m3fn


def _fp8(rng, shape, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(E4M3)


def _dequant(x, d, nheads_k, cu=None):
    """x (batch, seqlen, heads, dim) or varlen (total, heads, dim) times its (batch, nheads_k)
    factors; query heads map to column h // (heads // nheads_k)."""
    x = ref.f64(x)
    if d is None:
        return x
    d = ref.f64(d)
    heads = x.shape[-2]
    cols = np.arange(heads) // (heads // nheads_k)
    if cu is None:
        return x * d[:, None, cols, None]
    seq = np.searchsorted(np.asarray(cu), np.arange(x.shape[0]), side="right") - 1
    return x * d[seq][:, cols, None]


@pytest.mark.parametrize("opts", [{}, {"causal": True}, {"window_size": (4, 2), "softcap": 6.0},
                                  {"softmax_scale": 0.25}], ids=str)
@pytest.mark.parametrize("heads", [(4, 2), (3, 3), (4, 1)], ids=str)
def test_attention_fp8_matches_reference(rng, opts, heads):
    h, hk = heads
    b, lq, lk, d = 2, 13, 19, 32
    q, k, v = _fp8(rng, (b, lq, h, d)), _fp8(rng, (b, lk, hk, d)), _fp8(rng, (b, lk, hk, d))
    dq, dk, dv = (rng.uniform(0.05, 0.6, (b, hk)).astype(np.float32) for _ in range(3))
    out, lse = flashkit.attention_fp8(q, k, v, descale_q=dq, descale_k=dk, descale_v=dv,
                                      return_lse=True, **opts)
    assert out.dtype == ref.np_dtype("bfloat16") and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == (b, h, lq)
    r_out, r_lse = ref.attention(_dequant(q, dq, hk), _dequant(k, dk, hk), _dequant(v, dv, hk),
                                 **opts)
    ref.assert_close(out, r_out, "bfloat16", what="out")
    ref.assert_close(lse, r_lse, "bfloat16", what="lse")


def test_attention_fp8_varlen_no_descales_and_bf16_equality(rng):
    """Varlen with an empty sequence and no descale factors; then bit for bit what attention()
    gives on the bf16-rounded dequantised inputs."""
    cu_q = np.array([0, 5, 5, 17], np.int32)
    cu_k = np.array([0, 9, 14, 30], np.int32)
    q, k, v = _fp8(rng, (17, 4, 16)), _fp8(rng, (30, 2, 16)), _fp8(rng, (30, 2, 16))
    out = flashkit.attention_fp8(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, causal=True)
    r_out, _ = ref.attention(q, k, v, causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    ref.assert_close(out, r_out, "bfloat16", what="varlen out")

    dq = rng.uniform(0.1, 2.0, (3, 2)).astype(np.float32)
    got = flashkit.attention_fp8(q, k, v, descale_q=dq, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    bf16 = ref.np_dtype("bfloat16")
    qb = _dequant(q, dq, 2, cu_q).astype(np.float32).astype(bf16)
    want = flashkit.attention(qb, ref.f64(k).astype(bf16), ref.f64(v).astype(bf16),
                              cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_attention_fp8_select_kernel_and_workspace():
    q = np.zeros((1, 4, 2, 8), E4M3)
    ctx = flashkit.default_context()
    assert ctx.select_kernel("attention_fp8", q, q, q) == "cpu.attention+fp8_dequant"
    assert ctx.workspace_size("attention_fp8", q, q, q) == 0


def test_attention_fp8_refusals(rng):
    q, k = _fp8(rng, (1, 4, 2, 8)), _fp8(rng, (1, 6, 2, 8))
    bf = ref.f64(q).astype(ref.np_dtype("bfloat16"))
    with pytest.raises(flashkit.InvalidArgumentError, match="q: .*float8_e4m3fn"):
        flashkit.attention_fp8(bf, bf, bf)
    e5 = ref.f64(k).astype(ml_dtypes.float8_e5m2)
    with pytest.raises(flashkit.InvalidArgumentError, match="k: dtype float8_e5m2 must be float8_e4m3fn"):
        flashkit.attention_fp8(q, e5, k)
    with pytest.raises(flashkit.InvalidArgumentError, match="q: dtype uint8 must be float8_e4m3fn"):
        flashkit.attention_fp8(q.view(np.uint8), k, k)
    out = np.full(q.shape, np.nan, np.float16)
    with pytest.raises(flashkit.InvalidArgumentError, match="out: dtype float16 must be bfloat16"):
        flashkit.attention_fp8(q, k, k, out=out)
    assert np.isnan(out).all()
    with pytest.raises(flashkit.InvalidArgumentError, match="descale_k: .*float32"):
        flashkit.attention_fp8(q, k, k, descale_k=np.ones((1, 2), np.float16))
    with pytest.raises(flashkit.InvalidArgumentError, match="descale_v.*nheads_k"):
        flashkit.attention_fp8(q, k, k, descale_v=np.ones((1, 3), np.float32))
    # attention() points fp8 inputs at attention_fp8, naming q as an input.
    with pytest.raises(flashkit.NotSupportedError, match="^q: fp8 .*not taken by this call.*attention_fp8"):
        flashkit.attention(q, k, k)
    # A Python number as a descale factor is refused with the broadcast view to use instead,
    # and that view gives the same result as the full array.
    for name in ("descale_q", "descale_k", "descale_v"):
        with pytest.raises(flashkit.InvalidArgumentError, match=f"^{name}: a Python number.*broadcast_to"):
            flashkit.attention_fp8(q, k, k, **{name: 0.5})
    full = flashkit.attention_fp8(q, k, k, descale_v=np.full((q.shape[0], k.shape[2]), 0.5, np.float32))
    view = flashkit.attention_fp8(q, k, k, descale_v=np.broadcast_to(np.float32(0.5), (q.shape[0], k.shape[2])))
    np.testing.assert_array_equal(np.asarray(full, np.float32), np.asarray(view, np.float32))
