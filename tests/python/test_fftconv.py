"""flashkit.FFTConv against direct float64 convolution sums."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("mode,seqlen,flen,fft_size", [
    ("causal", 64, 64, None),
    ("causal", 100, 17, None),
    ("causal", 50, 50, 128),
    ("circular", 48, 20, 64),
    ("bidirectional", 40, 21, None),
    ("bidirectional", 33, 65, None),
])
def test_fftconv_modes(rng, dtype, mode, seqlen, flen, fft_size):
    conv = flashkit.FFTConv(seqlen, fft_size=fft_size, mode=mode, dtype=dtype)
    u = ref.randn(rng, (2, 3, seqlen), dtype)
    k = ref.randn(rng, (3, flen), "float32", scale=0.3)
    y = conv(u, k)
    assert y.shape == u.shape and y.dtype == u.dtype
    n = fft_size or conv.resolved_fft_size(3, flen)
    ref.assert_close(y, ref.fftconv(u, k, mode=mode, fft_size=n), dtype, factor=2)


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_fftconv_skip_and_gates(rng, dtype):
    conv = flashkit.FFTConv(80)                 # dtype taken from u
    u = ref.randn(rng, (2, 4, 80), dtype)
    k = ref.randn(rng, (4, 80), "float32", scale=0.2)
    D = ref.randn(rng, (4,), "float32")
    pre = ref.randn(rng, (2, 4, 80), dtype)
    post = ref.randn(rng, (2, 4, 80), dtype)
    y = conv(u, k, D=D, pregate=pre, postgate=post)
    ref.assert_close(y, ref.fftconv(u, k, D, pre, post), dtype, factor=4)
    # the cached plan is reused with another batch size and out=
    out = np.empty((1, 4, 80), u.dtype)
    assert conv(u[:1], k, D=D, out=out) is out
    ref.assert_close(out, ref.fftconv(u[:1], k, D), dtype, factor=2)


def test_fftconv_plan_rules():
    assert flashkit.FFTConv(100).resolved_fft_size(2, 100) == 256
    assert flashkit.FFTConv(100, mode="bidirectional").resolved_fft_size(2, 21) == 128
    with pytest.raises(flashkit.InvalidArgumentError, match="fft_size"):
        flashkit.FFTConv(64, fft_size=96).resolved_fft_size(1, 64)
    with pytest.raises(flashkit.InvalidArgumentError, match="fft_size"):
        flashkit.FFTConv(64, fft_size=64, mode="causal").resolved_fft_size(1, 64)
    with pytest.raises(flashkit.InvalidArgumentError, match="mode"):
        flashkit.FFTConv(64, mode="acausal")
    # Not a power of two (or negative): refused at construction, before any call.
    for bad in (200, -8, 3):
        with pytest.raises(flashkit.InvalidArgumentError, match=f"fft_size: {bad} is not a power"):
            flashkit.FFTConv(64, fft_size=bad)
    assert flashkit.FFTConv(64, fft_size=0).fft_size == 0  # 0: the C spelling of None


# --- plans never outlive their context ----------------------------------------------------

def test_fftconv_after_context_close_raises(rng):
    # The cached plan of a closed context must not be reused (it pointed into freed memory).
    u, k = ref.randn(rng, (1, 2, 64)), ref.randn(rng, (2, 64))
    c = flashkit.Context("cpu")
    conv = flashkit.FFTConv(64)
    ref.assert_close(conv.run(c, u, k), ref.fftconv(u, k), "float32")
    c.close()
    with pytest.raises(flashkit.InvalidArgumentError, match="context: used after close"):
        conv.run(c, u, k)
    with pytest.raises(flashkit.InvalidArgumentError, match="context: used after close"):
        conv.select_kernel(u, k, context=c)
    with pytest.raises(flashkit.InvalidArgumentError, match="context: used after close"):
        conv.resolved_fft_size(2, 64, context=c)
    conv.close()  # the plans are gone already: nothing is destroyed twice


def test_fftconv_after_with_block_raises(rng):
    u, k = ref.randn(rng, (1, 2, 32)), ref.randn(rng, (2, 32))
    conv = flashkit.FFTConv(32)
    with flashkit.Context("cpu") as c:
        conv.run(c, u, k)
    with pytest.raises(flashkit.InvalidArgumentError, match="context: used after close"):
        conv.run(c, u, k)
    # other contexts are unaffected
    ref.assert_close(conv(u, k), ref.fftconv(u, k), "float32")


def test_context_close_destroys_its_plans_first(rng, monkeypatch, no_gc):
    from flashkit import capi
    events = []
    plan_destroy, ctx_destroy = capi.fk_fftconv_plan_destroy, capi.fk_context_destroy
    monkeypatch.setattr(capi, "fk_fftconv_plan_destroy",
                        lambda p: (events.append("plan"), plan_destroy(p))[1])
    monkeypatch.setattr(capi, "fk_context_destroy",
                        lambda h: (events.append("context"), ctx_destroy(h))[1])
    u = ref.randn(rng, (1, 2, 32))
    conv_a, conv_b = flashkit.FFTConv(32), flashkit.FFTConv(32, mode="circular")
    with flashkit.Context("cpu") as c:
        conv_a.run(c, u, ref.randn(rng, (2, 32)))
        conv_a.run(c, u, ref.randn(rng, (2, 16)))    # a second plan (filter_len 16)
        conv_b.run(c, u, ref.randn(rng, (2, 8)))
        conv_a(u, ref.randn(rng, (2, 32)))           # a plan on the default context: kept
    assert events == ["plan", "plan", "plan", "context"]
    conv_a.close()
    conv_b.close()
    assert events == ["plan", "plan", "plan", "context", "plan"]
