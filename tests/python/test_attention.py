"""flashkit.attention on the CPU backend against the float64 reference."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref

CONFIGS = [
    # (batch, seqlen_q, seqlen_k, nheads, nheads_k, head_dim, options)
    (2, 17, 17, 4, 4, 32, {}),
    (1, 33, 33, 4, 2, 64, {"causal": True}),
    (2, 9, 23, 6, 2, 16, {"causal": True}),                 # GQA, seqlen_q < seqlen_k
    (1, 23, 9, 2, 1, 40, {"causal": True}),                 # MQA, rows that see no key
    (1, 31, 31, 2, 2, 32, {"window_size": (5, 3)}),
    (1, 20, 28, 2, 1, 24, {"window_size": (4, 0), "softcap": 5.0}),
    (2, 16, 16, 2, 2, 8, {"softmax_scale": 0.3, "softcap": 2.0, "causal": True}),
    (1, 5, 7, 1, 1, 256, {}),
]


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c[:6]}-{sorted(c[6])}")
def test_attention_matches_reference(rng, dtype, cfg):
    b, lq, lk, h, hk, d, opts = cfg
    q = ref.randn(rng, (b, lq, h, d), dtype)
    k = ref.randn(rng, (b, lk, hk, d), dtype)
    v = ref.randn(rng, (b, lk, hk, d), dtype)
    out, lse = flashkit.attention(q, k, v, return_lse=True, **opts)
    assert isinstance(out, np.ndarray) and out.dtype == q.dtype and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == (b, h, lq)
    r_out, r_lse = ref.attention(q, k, v, **opts)
    ref.assert_close(out, r_out, dtype, what="out")
    ref.assert_close(lse, r_lse, "float32", factor=10, what="lse")


def test_attention_fully_masked_rows_give_zero_and_minus_inf(rng):
    q = ref.randn(rng, (1, 6, 1, 16))
    k = ref.randn(rng, (1, 2, 1, 16))
    out, lse = flashkit.attention(q, k, k, causal=True, return_lse=True)
    # bottom-right alignment: query rows 0..3 sit before key 0
    assert np.all(out[0, :4] == 0) and np.all(np.isneginf(lse[0, 0, :4]))
    assert np.all(np.isfinite(lse[0, 0, 4:]))


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_attention_varlen(rng, dtype):
    lens_q = [5, 0, 12, 7]
    lens_k = [9, 3, 12, 4]
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    h, hk, d = 4, 2, 32
    q = ref.randn(rng, (cu_q[-1], h, d), dtype)
    k = ref.randn(rng, (cu_k[-1], hk, d), dtype)
    v = ref.randn(rng, (cu_k[-1], hk, d), dtype)
    for opts in ({}, {"causal": True}, {"window_size": (2, 1), "softcap": 3.0}):
        out, lse = flashkit.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                      max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k),
                                      return_lse=True, **opts)
        assert out.shape == q.shape and lse.shape == (h, cu_q[-1])
        r_out, r_lse = ref.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, **opts)
        ref.assert_close(out, r_out, dtype, what=f"out {opts}")
        ref.assert_close(lse, r_lse, "float32", factor=10, what=f"lse {opts}")


def test_attention_varlen_max_seqlen_below_longest(rng):
    # Host cu_seqlens are always checked: a max_seqlen below the longest sequence is refused,
    # naming the argument, and out stays untouched.
    cu_q = np.array([0, 5, 5, 17], np.int32)
    cu_k = np.array([0, 9, 12, 24], np.int32)
    q = ref.randn(rng, (17, 2, 16))
    k = ref.randn(rng, (24, 1, 16))
    out = np.full_like(q, 7.0)
    with pytest.raises(flashkit.InvalidArgumentError, match=r"max_seqlen_q: 11 .*\(12\)"):
        flashkit.attention(q, k, k, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=11,
                           out=out)
    with pytest.raises(flashkit.InvalidArgumentError, match=r"max_seqlen_k: 3 .*\(12\)"):
        flashkit.attention(q, k, k, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_k=3,
                           out=out)
    assert np.all(out == 7.0)
    # Larger than the longest: fine, same result as not given.
    a = flashkit.attention(q, k, k, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=100,
                           max_seqlen_k=12)
    b = flashkit.attention(q, k, k, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert np.array_equal(a, b)


def test_attention_strided_inputs_and_out(rng):
    # (batch, nheads, seqlen, head_dim) storage viewed as (batch, seqlen, nheads, head_dim)
    q = ref.randn(rng, (2, 4, 19, 32)).transpose(0, 2, 1, 3)
    k = ref.randn(rng, (2, 4, 21, 32)).transpose(0, 2, 1, 3)
    v = ref.randn(rng, (2, 21, 4, 64))[..., ::2]  # last dim not contiguous -> rejected below
    v_ok = np.ascontiguousarray(v)[..., :32]        # padded rows: row stride 64, contiguous dim
    out = np.empty((2, 19, 4, 32), np.float32)
    res = flashkit.attention(q, k, v_ok, out=out)
    assert res is out
    ref.assert_close(out, ref.attention(q, k, v_ok)[0], "float32", what="strided")
    with pytest.raises(flashkit.InvalidArgumentError, match="v"):
        flashkit.attention(q, k, v[..., :32] if v.shape[-1] >= 32 else v)


def test_attention_zero_sized(rng):
    q = ref.randn(rng, (0, 4, 2, 16))
    out = flashkit.attention(q, q, q)
    assert out.shape == (0, 4, 2, 16)


def test_attention_into_a_given_lse(rng):
    """``lse=``: a preallocated float32 array (here a strided view of a larger buffer, rows
    padded) is filled in place and returned with out; varlen too; a wrong shape, a wrong dtype
    and an lse overlapping out are refused by name with both outputs untouched."""
    q = ref.randn(rng, (2, 11, 3, 16))
    k = ref.randn(rng, (2, 13, 3, 16))
    v = ref.randn(rng, (2, 13, 3, 16))
    buf = np.full((2, 3, 16), np.nan, np.float32)
    lse = buf[:, :, :11]                       # (batch, nheads, seqlen_q), padded rows
    res = flashkit.attention(q, k, v, causal=True, lse=lse)
    assert isinstance(res, tuple) and res[1] is lse
    r_out, r_lse = ref.attention(q, k, v, causal=True)
    ref.assert_close(res[0], r_out, "float32", what="out")
    ref.assert_close(lse, r_lse, "float32", factor=10, what="lse")
    assert np.isnan(buf[:, :, 11:]).all()     # the padding is not written

    cu = np.array([0, 4, 11], np.int32)
    qv, kv = ref.randn(rng, (11, 2, 8)), ref.randn(rng, (11, 1, 8))
    lse_v = np.full((2, 11), np.nan, np.float32)
    out_v, got = flashkit.attention(qv, kv, kv, cu_seqlens_q=cu, cu_seqlens_k=cu, lse=lse_v)
    assert got is lse_v
    r_out, r_lse = ref.attention(qv, kv, kv, cu_seqlens_q=cu, cu_seqlens_k=cu)
    ref.assert_close(lse_v, r_lse, "float32", factor=10, what="varlen lse")

    out = np.full(q.shape, np.nan, np.float32)
    for bad, match in ((np.zeros((2, 3, 12), np.float32), "lse"),
                       (np.zeros((2, 3, 11), np.float16), "lse: dtype float16 must be float32"),
                       (np.zeros((2, 3, 11), np.int32), "lse: dtype int32 must be float32"),
                       (out.reshape(-1)[:66].reshape(2, 3, 11), "lse.*out|out.*lse")):
        before = bad.copy()
        with pytest.raises(flashkit.InvalidArgumentError, match=match):
            flashkit.attention(q, k, v, out=out, lse=bad)
        assert np.isnan(out).all()
        np.testing.assert_array_equal(bad, before)


def test_attention_shape_messages(rng):
    q = ref.randn(rng, (2, 37, 8, 16))
    # A wrong lse names the first differing dimension, the whole layout and both shapes.
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=r"lse: nheads is 37 but q gives 8; expected \(batch, nheads, seqlen_q\) "
                             r"= \(2, 8, 37\), got \(2, 37, 8\)"):
        flashkit.attention(q, q, q, lse=np.empty((2, 37, 8), np.float32))
    # A rank-3 q without cu_seqlens is pointed at the packed varlen form.
    q3 = ref.randn(rng, (31, 8, 16))
    with pytest.raises(flashkit.InvalidArgumentError, match="q: rank 3 .*packed varlen form.*cu_seqlens_q"):
        flashkit.attention(q3, q3, q3)
