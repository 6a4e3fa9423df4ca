"""flashkit.monarch and flashkit.blockdiag_linear against the float64 reference."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("shapes", [
    ((8, 8, 8), (8, 8, 8)),           # square blocks, n = 64
    ((4, 6, 5), (3, 7, 8)),           # rectangular: nb1*q = 24 = nb2*r
    ((2, 16, 8), (4, 3, 8)),
], ids=str)
def test_monarch(rng, dtype, shapes):
    w1 = ref.randn(rng, shapes[0], dtype, scale=0.5)
    w2 = ref.randn(rng, shapes[1], dtype, scale=0.5)
    n = shapes[0][0] * shapes[0][2]
    x = ref.randn(rng, (13, n), dtype)
    out = flashkit.monarch(x, w1, w2)
    assert out.shape == (13, shapes[1][0] * shapes[1][1]) and out.dtype == x.dtype
    ref.assert_close(out, ref.monarch(x, w1, w2), dtype)


def test_monarch_bias_leading_dims_and_out(rng):
    w1 = ref.randn(rng, (4, 4, 4))
    w2 = ref.randn(rng, (4, 4, 4))
    x = ref.randn(rng, (2, 3, 16))
    bias = ref.randn(rng, (16,), "float16")
    out = np.empty((2, 3, 16), np.float32)
    assert flashkit.monarch(x, w1, w2, out=out, bias=bias) is out
    ref.assert_close(out, ref.monarch(x, w1, w2, bias=bias), "float32")


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_blockdiag_linear(rng, dtype):
    w = ref.randn(rng, (4, 12, 6), dtype, scale=0.5)
    x = ref.randn(rng, (2, 5, 24), dtype)
    bias = ref.randn(rng, (48,), "float32")
    out = flashkit.blockdiag_linear(x, w, bias=bias)
    assert out.shape == (2, 5, 48) and out.dtype == x.dtype
    ref.assert_close(out, ref.blockdiag(x, w, bias=bias), dtype)


def test_blockdiag_strided_rows(rng):
    w = ref.randn(rng, (2, 3, 4))
    big = ref.randn(rng, (7, 20))
    x = big[:, :8]                       # row stride 20
    ref.assert_close(flashkit.blockdiag_linear(x, w), ref.blockdiag(x, w), "float32")
    with pytest.raises(flashkit.InvalidArgumentError, match="x"):
        flashkit.blockdiag_linear(ref.randn(rng, (3, 4, 20))[:, :, :8].transpose(1, 0, 2), w)


def test_bias_and_out_are_keyword_only(rng):
    # The C ABI, Java and Rust order is (x, w1, w2, bias, out); a call ported in that order
    # must fail loudly instead of taking the bias for `out` and overwriting it.
    w1 = ref.randn(rng, (4, 4, 4))
    w2 = ref.randn(rng, (4, 4, 4))
    x = ref.randn(rng, (16,))
    bias = ref.randn(rng, (16,))
    kept = bias.copy()
    with pytest.raises(TypeError):
        flashkit.monarch(x, w1, w2, bias)
    with pytest.raises(TypeError):
        flashkit.blockdiag_linear(x, w1, bias)
    with pytest.raises(TypeError):
        flashkit.Context().monarch(x, w1, w2, bias)
    np.testing.assert_array_equal(bias, kept)
    ref.assert_close(flashkit.monarch(x, w1, w2, bias=bias), ref.monarch(x, w1, w2, bias=bias), "float32")


@pytest.mark.parametrize("lead", [(2, 0), (0, 0), (4, 0, 3), (0,), (0, 2), (1, 0)])
def test_no_tokens_in_any_leading_dimension(rng, lead):
    """x with no tokens gives an empty result of x's shape whichever leading extent is 0
    (before, (2, 0, n) was refused: its leading strides cannot nest, yet it has no rows)."""
    w = ref.randn(rng, (4, 4, 4)).astype(np.float32)
    x = np.zeros(lead + (16,), np.float32)
    for y in (flashkit.blockdiag_linear(x, w), flashkit.monarch(x, w, w)):
        assert y.shape == lead + (16,) and y.dtype == np.float32
    out = np.zeros(lead + (16,), np.float32)
    assert flashkit.blockdiag_linear(x, w, out=out) is out
    # A non-empty x beside it still checks its strides.
    with pytest.raises(flashkit.InvalidArgumentError, match="x: the leading dimensions"):
        flashkit.blockdiag_linear(np.zeros((6, 4, 16), np.float32)[:, ::2][::-1][::-1].transpose(1, 0, 2), w)
