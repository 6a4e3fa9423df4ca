"""flashkit.flash_attn_interface: FlashAttention 2's signatures against the reference."""

import inspect

import numpy as np
import pytest

import flashkit
import fk_reference as ref
from flashkit import flash_attn_interface as fa

# FlashAttention 2's public signatures (flash_attn/flash_attn_interface.py): names and defaults;
# flash_attn_func and flash_attn_varlen_func add FlashAttention-3's FP8 keywords after them
# (keyword only, so every FlashAttention 2 call binds as before).
FA2_SIGNATURES = {
    "flash_attn_func": "(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, "
                       "window_size=(-1, -1), softcap=0.0, alibi_slopes=None, "
                       "deterministic=False, return_attn_probs=False, *, q_descale=None, "
                       "k_descale=None, v_descale=None)",
    "flash_attn_kvpacked_func": "(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, "
                                "window_size=(-1, -1), softcap=0.0, alibi_slopes=None, "
                                "deterministic=False, return_attn_probs=False)",
    "flash_attn_qkvpacked_func": "(qkv, dropout_p=0.0, softmax_scale=None, causal=False, "
                                 "window_size=(-1, -1), softcap=0.0, alibi_slopes=None, "
                                 "deterministic=False, return_attn_probs=False)",
    "flash_attn_varlen_func": "(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
                              "max_seqlen_k, dropout_p=0.0, softmax_scale=None, causal=False, "
                              "window_size=(-1, -1), softcap=0.0, alibi_slopes=None, "
                              "deterministic=False, return_attn_probs=False, block_table=None, *, "
                              "q_descale=None, k_descale=None, v_descale=None)",
    "flash_attn_varlen_kvpacked_func": "(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
                                       "max_seqlen_k, dropout_p=0.0, softmax_scale=None, "
                                       "causal=False, window_size=(-1, -1), softcap=0.0, "
                                       "alibi_slopes=None, deterministic=False, "
                                       "return_attn_probs=False)",
    "flash_attn_varlen_qkvpacked_func": "(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, "
                                        "softmax_scale=None, causal=False, "
                                        "window_size=(-1, -1), softcap=0.0, alibi_slopes=None, "
                                        "deterministic=False, return_attn_probs=False)",
}


@pytest.mark.parametrize("name", sorted(FA2_SIGNATURES))
def test_signatures_match_flash_attention_2(name):
    assert str(inspect.signature(getattr(fa, name))) == FA2_SIGNATURES[name]


OPTS = [
    {},
    {"causal": True},
    {"window_size": (3, 2)},
    {"causal": True, "softcap": 4.0, "softmax_scale": 0.2},
]


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("opts", OPTS, ids=str)
def test_flash_attn_func_gqa(rng, dtype, opts):
    q = ref.randn(rng, (2, 14, 6, 32), dtype)
    k = ref.randn(rng, (2, 19, 2, 32), dtype)
    v = ref.randn(rng, (2, 19, 2, 32), dtype)
    out, lse, probs = fa.flash_attn_func(q, k, v, return_attn_probs=True, **opts)
    assert probs is None and lse.shape == (2, 6, 14) and lse.dtype == np.float32
    r_out, r_lse = ref.attention(q, k, v, **opts)
    ref.assert_close(out, r_out, dtype)
    ref.assert_close(lse, r_lse, "float32", factor=10)
    plain = fa.flash_attn_func(q, k, v, deterministic=True, **opts)
    np.testing.assert_array_equal(ref.f64(plain), ref.f64(out))


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_packed_batched(rng, dtype):
    qkv = ref.randn(rng, (2, 11, 3, 4, 16), dtype)
    out = fa.flash_attn_qkvpacked_func(qkv, causal=True)
    r_out, _ = ref.attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)
    ref.assert_close(out, r_out, dtype)
    q = ref.randn(rng, (2, 7, 4, 16), dtype)
    kv = ref.randn(rng, (2, 11, 2, 2, 16), dtype)
    out, lse, _ = fa.flash_attn_kvpacked_func(q, kv, window_size=(4, 0), return_attn_probs=True)
    r_out, r_lse = ref.attention(q, kv[:, :, 0], kv[:, :, 1], window_size=(4, 0))
    ref.assert_close(out, r_out, dtype)
    ref.assert_close(lse, r_lse, "float32", factor=10)


def _cu(lens):
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("opts", OPTS, ids=str)
def test_varlen_gqa(rng, dtype, opts):
    lq, lk = [3, 9, 0, 6], [5, 9, 2, 11]
    cq, ck = _cu(lq), _cu(lk)
    q = ref.randn(rng, (cq[-1], 4, 24), dtype)
    k = ref.randn(rng, (ck[-1], 1, 24), dtype)
    v = ref.randn(rng, (ck[-1], 1, 24), dtype)
    out, lse, probs = fa.flash_attn_varlen_func(q, k, v, cq, ck, max(lq), max(lk),
                                                return_attn_probs=True, **opts)
    assert probs is None and lse.shape == (4, cq[-1])
    r_out, r_lse = ref.attention(q, k, v, cu_seqlens_q=cq, cu_seqlens_k=ck, **opts)
    ref.assert_close(out, r_out, dtype)
    ref.assert_close(lse, r_lse, "float32", factor=10)


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_varlen_packed(rng, dtype):
    lens = [4, 10, 1]
    cu = _cu(lens)
    qkv = ref.randn(rng, (cu[-1], 3, 2, 32), dtype)
    out, lse, _ = fa.flash_attn_varlen_qkvpacked_func(qkv, cu, max(lens), causal=True,
                                                      softcap=3.0, return_attn_probs=True)
    r_out, r_lse = ref.attention(qkv[:, 0], qkv[:, 1], qkv[:, 2], causal=True, softcap=3.0,
                                 cu_seqlens_q=cu, cu_seqlens_k=cu)
    ref.assert_close(out, r_out, dtype)
    ref.assert_close(lse, r_lse, "float32", factor=10)
    lk = [6, 2, 9]
    ck = _cu(lk)
    q = ref.randn(rng, (cu[-1], 4, 32), dtype)
    kv = ref.randn(rng, (ck[-1], 2, 2, 32), dtype)
    out = fa.flash_attn_varlen_kvpacked_func(q, kv, cu, ck, max(lens), max(lk), causal=True)
    r_out, _ = ref.attention(q, kv[:, 0], kv[:, 1], cu_seqlens_q=cu, cu_seqlens_k=ck,
                             causal=True)
    ref.assert_close(out, r_out, dtype)


def test_packed_layout_errors(rng):
    with pytest.raises(flashkit.InvalidArgumentError, match="qkv"):
        fa.flash_attn_qkvpacked_func(ref.randn(rng, (1, 4, 2, 2, 8)))


def test_torch_cpu_drop_in(rng):
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 9, 4, 16, dtype=torch.bfloat16)
    kv = torch.randn(1, 9, 2, 2, 16, dtype=torch.bfloat16)
    out = fa.flash_attn_kvpacked_func(q, kv, causal=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    r, _ = ref.attention(q.float().numpy(), kv[:, :, 0].float().numpy(),
                         kv[:, :, 1].float().numpy(), causal=True)
    ref.assert_close(out.float().numpy(), r, "bfloat16")
    q.requires_grad_(True)
    with pytest.raises(flashkit.NotSupportedError, match="requires_grad"):
        fa.flash_attn_kvpacked_func(q, kv)
    kvg = kv.clone().requires_grad_(True)
    with pytest.raises(flashkit.NotSupportedError, match="kv"):
        fa.flash_attn_kvpacked_func(q.detach(), kvg)


def test_fp8_keywords_route_to_attention_fp8(rng):
    """FlashAttention-3's FP8 call shape: float8_e4m3fn q, k, v with q_descale / k_descale /
    v_descale give flashkit.attention_fp8's bf16 result (batched and varlen)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    e4m3 = ml_dtypes.float8_e4m3fn
    q = (rng.standard_normal((2, 7, 4, 16)) * 2).astype(e4m3)
    k = (rng.standard_normal((2, 9, 2, 16)) * 2).astype(e4m3)
    dq, dk, dv = (rng.uniform(0.1, 0.7, (2, 2)).astype(np.float32) for _ in range(3))
    out, lse, none = fa.flash_attn_func(q, k, k, causal=True, q_descale=dq, k_descale=dk,
                                        v_descale=dv, return_attn_probs=True)
    want, want_lse = flashkit.attention_fp8(q, k, k, descale_q=dq, descale_k=dk, descale_v=dv,
                                            causal=True, return_lse=True)
    assert none is None and out.dtype == want.dtype
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(lse, want_lse)
    cu = np.array([0, 3, 7], np.int32)
    qv, kv = q[0], k[0, :7]
    got = fa.flash_attn_varlen_func(qv, kv, kv, cu, cu, 4, 4, k_descale=dk)
    want = flashkit.attention_fp8(qv, kv, kv, descale_k=dk, cu_seqlens_q=cu, cu_seqlens_k=cu)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_packed_rank_named(rng):
    """A packed tensor of the wrong rank is named with the packed layout, not as one of its
    slices or through the varlen form's hint."""
    import flashkit.flash_attn_interface as fa
    q = ref.randn(rng, (2, 5, 2, 8)).astype(np.float32)
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=r"kv: rank 4 .*expected rank 5, \(batch_size, seqlen_k, 2, nheads_k"):
        fa.flash_attn_kvpacked_func(q, ref.randn(rng, (2, 5, 2, 8)).astype(np.float32))
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=r"qkv: rank 4 .*expected rank 5, \(batch_size, seqlen, 3, nheads"):
        fa.flash_attn_qkvpacked_func(ref.randn(rng, (2, 5, 3, 8)).astype(np.float32))
    cu = np.array([0, 5], np.int32)
    with pytest.raises(flashkit.InvalidArgumentError, match=r"qkv: rank 5 .*expected rank 4"):
        fa.flash_attn_varlen_qkvpacked_func(ref.randn(rng, (1, 5, 3, 2, 8)).astype(np.float32),
                                            cu, 5)
