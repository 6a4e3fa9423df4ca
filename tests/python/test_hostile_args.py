"""Careless or hostile keyword values: each must raise flashkit.InvalidArgumentError naming the
argument (no OverflowError/TypeError/ValueError from deep inside, no silent truthiness)."""

import numpy as np
import pytest

import flashkit


@pytest.fixture
def a():
    return np.random.default_rng(0).standard_normal((4, 4), dtype=np.float32)


@pytest.fixture
def q():
    return np.random.default_rng(1).standard_normal((1, 8, 2, 4), dtype=np.float32)


@pytest.mark.parametrize("kw", ["alpha", "beta"])
def test_float_params_too_large_for_a_float(a, kw):
    with pytest.raises(flashkit.InvalidArgumentError, match=kw):
        flashkit.gemm(a, a, **{kw: 10**400})


@pytest.mark.parametrize("kw", ["softmax_scale", "softcap"])
def test_attention_float_params_too_large_for_a_float(q, kw):
    with pytest.raises(flashkit.InvalidArgumentError, match=kw):
        flashkit.attention(q, q, q, **{kw: 10**400})


@pytest.mark.parametrize("value", ["no", "False", np.array([1, 0]), [True], 0.5, None, 2])
@pytest.mark.parametrize("kw", ["trans_a", "trans_b"])
def test_gemm_flags_must_be_bools(a, kw, value):
    out = np.full((4, 4), 7, np.float32)
    with pytest.raises(flashkit.InvalidArgumentError, match=kw):
        flashkit.gemm(a, a, out=out, **{kw: value})
    assert (out == 7).all()  # untouched


@pytest.mark.parametrize("value", ["yes", np.array([1, 1]), [1], 1.0, 2])
@pytest.mark.parametrize("kw", ["causal", "return_lse"])
def test_attention_flags_must_be_bools(q, kw, value):
    with pytest.raises(flashkit.InvalidArgumentError, match=kw):
        flashkit.attention(q, q, q, **{kw: value})


def test_flags_accept_bools_and_0_1(a, q):
    for v in (True, False, np.bool_(True), 0, 1):
        flashkit.gemm(a, a, trans_a=v)
        flashkit.attention(q, q, q, causal=v)


def test_unhashable_choices(a):
    with pytest.raises(flashkit.InvalidArgumentError, match="activation"):
        flashkit.gemm(a, a, activation=["relu"])
    with pytest.raises(flashkit.InvalidArgumentError, match="mode"):
        flashkit.FFTConv(8, mode=["causal"])
    with pytest.raises(flashkit.InvalidArgumentError, match="kernel_family"):
        flashkit.Context("cpu", kernel_family=["generic"])
    with pytest.raises(flashkit.InvalidArgumentError, match="op"):
        flashkit.Context("cpu").select_kernel(["gemm"], a, a)


@pytest.mark.parametrize("value", ["x", 2**80, 1.5, -1])
def test_max_seqlen_checked(q, value):
    cu = np.array([0, 8], np.int32)
    with pytest.raises(flashkit.InvalidArgumentError, match="max_seqlen_q"):
        flashkit.attention(q[0], q[0], q[0], cu_seqlens_q=cu, cu_seqlens_k=cu,
                           max_seqlen_q=value)


def _overcommit_always():
    """Linux vm.overcommit_memory == 1: any allocation succeeds (and a 16 TiB result would be
    computed until the test times out)."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(_overcommit_always(), reason="vm.overcommit_memory=1: a 16 TiB array "
                    "would be allocated, not refused")
def test_output_too_large_to_allocate_names_out(a):
    from numpy.lib.stride_tricks import as_strided
    huge = as_strided(np.zeros(1, np.float32), (2**40, 4), (0, 0))  # 16 TiB result
    with pytest.raises(flashkit.OutOfMemoryError, match="out"):
        flashkit.gemm(huge, a)


@pytest.mark.parametrize("value", [10**400, [0.0], "zero"])
def test_flash_attn_dropout_p_checked(q, value):
    from flashkit.flash_attn_interface import flash_attn_func
    with pytest.raises(flashkit.InvalidArgumentError, match="dropout_p"):
        flash_attn_func(q, q, q, dropout_p=value)


@pytest.mark.parametrize("value", [-0.5, float("nan"), 1.5])
def test_flash_attn_dropout_p_outside_0_1_is_invalid_not_unsupported(q, value):
    from flashkit.flash_attn_interface import flash_attn_func
    with pytest.raises(flashkit.InvalidArgumentError, match=r"dropout_p: .* \[0, 1\]"):
        flash_attn_func(q, q, q, dropout_p=value)
    with pytest.raises(flashkit.NotSupportedError, match="dropout_p"):  # a real probability
        flash_attn_func(q, q, q, dropout_p=0.1)


@pytest.mark.parametrize("value", [2**40, "x", None, 2.7, True])
def test_log_callback_max_level_checked(value):
    with pytest.raises(flashkit.InvalidArgumentError, match="max_level"):
        flashkit.set_log_callback(print, value)
    flashkit.set_log_callback(None)


def test_fftconv_filter_without_taps_is_named():
    u = np.random.default_rng(2).standard_normal((1, 2, 10), dtype=np.float32)
    conv = flashkit.FFTConv(10)
    with pytest.raises(flashkit.InvalidArgumentError, match="k: filter_len is 0"):
        conv(u, np.zeros((2, 0), np.float32))
    with pytest.raises(flashkit.InvalidArgumentError, match="filter_len: 0"):
        conv.resolved_fft_size(2, 0)
    assert conv.resolved_fft_size(2) == conv.resolved_fft_size(2, 10)  # None = seqlen


def test_flash_attn_return_attn_probs_checked(q):
    from flashkit.flash_attn_interface import flash_attn_func
    with pytest.raises(flashkit.InvalidArgumentError, match="return_attn_probs"):
        flash_attn_func(q, q, q, return_attn_probs=np.array([1, 1]))


def test_closing_the_default_context_does_not_break_the_process(a):
    flashkit.default_context("cpu").close()
    np.testing.assert_allclose(flashkit.gemm(a, a), a @ a, rtol=1e-5, atol=1e-5)
    assert not flashkit.default_context("cpu").closed


def test_masked_arrays_are_refused_not_unmasked(a):
    m = np.ma.masked_array(a, mask=a > 0)
    with pytest.raises(flashkit.InvalidArgumentError, match="b: .*masked"):
        flashkit.gemm(a, m)


class _NullInterface:
    __array_interface__ = {"shape": (4, 4), "typestr": "<f4", "data": (0, False), "version": 3}


class _BadDevice:
    def __dlpack__(self, **kw):
        return np.zeros((4, 4), np.float32).__dlpack__()

    def __dlpack_device__(self):
        return ("x", 0)


@pytest.mark.parametrize("bad", [_NullInterface(), _BadDevice()])
def test_broken_array_protocols_name_the_argument(a, bad):
    with pytest.raises(flashkit.InvalidArgumentError, match="b: "):
        flashkit.gemm(a, bad)
