"""flashkit.gemm on the CPU backend against the float64 reference."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_plain(rng, dtype, trans_a, trans_b):
    m, n, k = 37, 29, 70
    a = ref.randn(rng, (k, m) if trans_a else (m, k), dtype)
    b = ref.randn(rng, (n, k) if trans_b else (k, n), dtype)
    d = flashkit.gemm(a, b, trans_a=trans_a, trans_b=trans_b)
    assert d.shape == (m, n) and d.dtype == a.dtype
    ref.assert_close(d, ref.gemm(a, b, trans_a=trans_a, trans_b=trans_b), dtype)


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
def test_gemm_epilogue(rng, dtype, act):
    m, n, k = 16, 24, 40
    a = ref.randn(rng, (m, k), dtype)
    b = ref.randn(rng, (k, n), dtype)
    c = ref.randn(rng, (m, n), dtype)
    bias = ref.randn(rng, (n,), "float32")
    d = flashkit.gemm(a, b, c, alpha=0.7, beta=-1.3, bias=bias, activation=act)
    ref.assert_close(d, ref.gemm(a, b, c, alpha=0.7, beta=-1.3, bias=bias, act=act), dtype)


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_gemm_batched_and_broadcast(rng, dtype):
    a = ref.randn(rng, (3, 9, 20), dtype)
    b = ref.randn(rng, (20, 11), dtype)        # broadcast over the batch
    c = ref.randn(rng, (3, 9, 11), dtype)
    d = flashkit.gemm(a, b, c, beta=1.0)
    assert d.shape == (3, 9, 11)
    ref.assert_close(d, ref.gemm(a, b, c, beta=1.0), dtype)
    b3 = ref.randn(rng, (3, 11, 20), dtype)
    d2 = flashkit.gemm(a[0], b3, trans_b=True)  # a broadcast, b batched and transposed
    ref.assert_close(d2, ref.gemm(a[0], b3, trans_b=True), dtype)


def test_gemm_strided_views_and_out(rng):
    base = ref.randn(rng, (50, 64))
    a = base[:30, :40]                # padded rows
    b = ref.randn(rng, (25, 40)).T     # column-major view of (40, 25)
    out = np.full((30, 25), np.nan, np.float32)
    assert flashkit.gemm(a, b, out=out) is out
    ref.assert_close(out, ref.gemm(a, b), "float32")


def test_gemm_out_is_c_in_place_and_other_overlaps_are_refused(rng):
    """The documented overlap rules of ``out``: c itself (a residual add in place) is allowed;
    another view overlapping c, or out over an input, is InvalidArgumentError with the
    library's message, and the output is then untouched."""
    a, b = ref.randn(rng, (6, 10)), ref.randn(rng, (10, 7))
    c = ref.randn(rng, (6, 7))
    expected = ref.gemm(a, b, c.copy(), beta=1.0)
    assert flashkit.gemm(a, b, c, beta=1.0, out=c) is c
    ref.assert_close(c, expected, "float32")
    big = ref.randn(rng, (7, 7))
    before = big.copy()
    with pytest.raises(flashkit.InvalidArgumentError) as e:   # out = rows 1..6 of c's rows 0..5
        flashkit.gemm(a, b, big[:6], beta=1.0, out=big[1:])
    assert "out" in str(e.value) and "c" in str(e.value)
    np.testing.assert_array_equal(big, before)
    ab = ref.randn(rng, (6, 17))
    before = ab.copy()
    with pytest.raises(flashkit.InvalidArgumentError, match="out: overlaps a"):
        flashkit.gemm(ab[:, :10], b, out=ab[:, 3:10])   # out over a
    # Judged on address ranges (flashkit.h, "Data types and tensors"): interleaved columns of
    # one buffer count as overlapping even though they share no element.
    with pytest.raises(flashkit.InvalidArgumentError, match="out: overlaps a"):
        flashkit.gemm(ab[:, :10], b, out=ab[:, 10:])
    np.testing.assert_array_equal(ab, before)
    buf = ref.randn(rng, (42,))
    before = buf.copy()
    with pytest.raises(flashkit.InvalidArgumentError, match="out.*bias"):   # bias in out's rows
        flashkit.gemm(a, b, bias=buf[:7], out=buf.reshape(6, 7))
    np.testing.assert_array_equal(buf, before)


def test_gemm_mixed_output_dtype(rng):
    a = ref.randn(rng, (8, 16), "bfloat16")
    b = ref.randn(rng, (16, 4), "bfloat16")
    c = ref.randn(rng, (8, 4), "float32")
    d = flashkit.gemm(a, b, c, beta=0.5)
    assert d.dtype == np.float32
    ref.assert_close(d, ref.gemm(a, b, c, beta=0.5), "float32", factor=10)


def test_gemm_k_zero_writes_beta_c(rng):
    a = np.empty((5, 0), np.float32)
    b = np.empty((0, 3), np.float32)
    c = ref.randn(rng, (5, 3))
    d = flashkit.gemm(a, b, c, beta=2.0, bias=np.ones(3, np.float32))
    np.testing.assert_allclose(d, 2.0 * c + 1.0, rtol=1e-6)


def test_gemm_c_with_default_beta_is_documented(rng):
    # BLAS semantics: with beta == 0, c is not read (NaNs in it do not propagate) ...
    a, b = ref.randn(rng, (4, 6)), ref.randn(rng, (6, 5))
    c = np.full((4, 5), np.nan, np.float16)
    d = flashkit.gemm(a, b, c)
    assert np.isfinite(d).all()
    # ... but it still picks the dtype of an allocated output.
    assert d.dtype == np.float16
    ref.assert_close(d, ref.gemm(a, b), "float16")
    doc = " ".join(flashkit.gemm.__doc__.split())
    assert "beta=0.0" in doc and "not read" in doc and "beta=1.0" in doc
    assert "c's dtype, even when beta == 0" in doc


# ------------------------------------------------------------------------------------------
# gemm_scaled: fp8 inputs (ml_dtypes' float8 types) with dequantisation scales
# ------------------------------------------------------------------------------------------

FP8 = ["float8_e4m3fn", "float8_e5m2"]


def _fp8(rng, shape, name):
    return rng.standard_normal(shape).astype(getattr(ml_dtypes_mod(), name))


def ml_dtypes_mod():
    return pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("fa", FP8)
@pytest.mark.parametrize("fb", FP8)
@pytest.mark.parametrize("scales", ["none", "tensor", "row_col"])
def test_gemm_scaled_fp8(rng, fa, fb, scales):
    m, n, k = 23, 31, 140
    a = _fp8(rng, (m, k), fa)
    w = _fp8(rng, (n, k), fb)           # (N, K) weight, K-major as the Hopper kernel wants
    sa = sb = None
    if scales == "tensor":
        sa = np.array([0.37], np.float32)
        sb = np.array([2.5], np.float32)
    elif scales == "row_col":
        sa = rng.uniform(0.25, 4.0, m).astype(np.float32)
        sb = rng.uniform(0.25, 4.0, n).astype(np.float32)
    bias = ref.randn(rng, (n,), "float32")
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=sa, scale_b=sb, bias=bias,
                             activation="gelu_tanh")
    assert d.shape == (m, n) and d.dtype == ref.np_dtype("bfloat16")
    av = ref.f64(a) * (ref.f64(sa)[:, None] if sa is not None else 1.0)
    wv = ref.f64(w) * (ref.f64(sb)[:, None] if sb is not None else 1.0)
    expected = ref.gemm(av, wv, trans_b=True, bias=bias, act="gelu_tanh")
    ref.assert_close(d, expected, "bfloat16")


def test_gemm_scaled_out_dtype_and_context(rng):
    a = _fp8(rng, (2, 8, 48), "float8_e4m3fn")
    w = _fp8(rng, (16, 48), "float8_e4m3fn")
    sa = np.array([0.5], np.float32)
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=sa, out_dtype="float32", alpha=2.0)
    assert d.shape == (2, 8, 16) and d.dtype == np.float32
    ref.assert_close(d, ref.gemm(ref.f64(a), ref.f64(w), trans_b=True), "float32")
    ctx = flashkit.Context("cpu")
    assert ctx.select_kernel("gemm_scaled", a, w, trans_b=True) == "cpu.gemm"
    ref.assert_close(ctx.gemm_scaled(a, w, trans_b=True, out_dtype="float32"),
                     ref.gemm(ref.f64(a), ref.f64(w), trans_b=True), "float32")


def test_gemm_scaled_rules(rng):
    a = _fp8(rng, (4, 8), "float8_e4m3fn")
    w = _fp8(rng, (5, 8), "float8_e5m2")
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_a: length 3"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=np.ones(3, np.float32))
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_b"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_b=np.ones(5, np.float16))
    with pytest.raises(flashkit.InvalidArgumentError, match="b: "):
        flashkit.gemm_scaled(a, ref.randn(rng, (5, 8)), trans_b=True)
    with pytest.raises(flashkit.InvalidArgumentError, match="out_dtype"):
        flashkit.gemm_scaled(a, w, trans_b=True, out_dtype="float8_e4m3fn")
    # out_dtype against c's or out's dtype: named as out_dtype's conflict, out left untouched
    # (before, the library named c, and a given out silently overrode out_dtype).
    c32 = ref.randn(rng, (4, 5)).astype(np.float32)
    with pytest.raises(flashkit.InvalidArgumentError,
                       match="out_dtype: float16 differs from c's dtype float32"):
        flashkit.gemm_scaled(a, w, c32, trans_b=True, out_dtype="float16")
    out16 = np.full((4, 5), 7.0, np.float16)
    with pytest.raises(flashkit.InvalidArgumentError,
                       match="out_dtype: float32 differs from out's dtype float16"):
        flashkit.gemm_scaled(a, w, trans_b=True, out_dtype="float32", out=out16)
    assert np.all(out16 == 7.0)
    # The agreeing forms still run.
    d = flashkit.gemm_scaled(a, w, c32, trans_b=True, beta=1.0, out_dtype="float32")
    ref.assert_close(d, ref.gemm(ref.f64(a), ref.f64(w), trans_b=True) + ref.f64(c32), "float32")
    # Scales are float32 only, and the message says so (not "fp32, fp16 or bf16").
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_a: dtype float64 .*float32"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=np.ones(4, np.float64))
    # An 8-bit type with no DLPack code: the message names the argument.
    ml = ml_dtypes_mod()
    if hasattr(ml, "float8_e4m3fnuz"):
        with pytest.raises(flashkit.InvalidArgumentError, match="^b: dtype float8_e4m3fnuz"):
            flashkit.gemm_scaled(a, np.zeros((5, 8), ml.float8_e4m3fnuz), trans_b=True)


def test_gemm_scaled_python_number_scales(rng):
    """A per-tensor scale may be a Python or NumPy number: folded into alpha (float32)."""
    a = _fp8(rng, (9, 40), "float8_e4m3fn")
    w = _fp8(rng, (12, 40), "float8_e5m2")
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=0.37, scale_b=np.float32(2.5), alpha=1.5,
                             out_dtype="float32")
    expected = ref.gemm(ref.f64(a) * (0.37 * 2.5 * 1.5), ref.f64(w), trans_b=True)
    ref.assert_close(d, expected, "float32")
    # The same as 1-element tensors.
    same = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=np.array([0.37], np.float32),
                                scale_b=np.array([2.5], np.float32), alpha=1.5, out_dtype="float32")
    ref.assert_close(d, ref.f64(same), "float32")
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_a: inf must be finite"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=float("inf"))
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_b"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_b=True)  # a bool is not a scale
    with pytest.raises(flashkit.InvalidArgumentError, match="overflows float32"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=1e30, scale_b=1e30)
    # A non-finite alpha is alpha's fault, also when a scale is folded into it.
    with pytest.raises(flashkit.InvalidArgumentError, match="^alpha: inf must be finite"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=2.0, alpha=float("inf"))


def test_gemm_scaled_scaled_mm_scale_shapes(rng):
    """torch._scaled_mm's row-wise scale shapes, (M, 1) and (1, N), and (1, 1) per tensor."""
    m, n, k = 6, 10, 32
    a = _fp8(rng, (m, k), "float8_e4m3fn")
    w = _fp8(rng, (n, k), "float8_e4m3fn")
    sa = rng.uniform(0.5, 2.0, (m, 1)).astype(np.float32)
    sb = rng.uniform(0.5, 2.0, (1, n)).astype(np.float32)
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=sa, scale_b=sb, out_dtype="float32")
    expected = ref.gemm(ref.f64(a) * ref.f64(sa), ref.f64(w) * ref.f64(sb).T, trans_b=True)
    ref.assert_close(d, expected, "float32")
    one = np.full((1, 1), 0.5, np.float32)
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=one, out_dtype="float32")
    ref.assert_close(d, ref.gemm(ref.f64(a) * 0.5, ref.f64(w), trans_b=True), "float32")
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_a"):
        flashkit.gemm_scaled(a, w, trans_b=True, scale_a=np.ones((m, 2), np.float32))
    # Swapped orientations (a row vector for a, a column for b) are refused, not flattened.
    sq = _fp8(rng, (n, k), "float8_e4m3fn")
    with pytest.raises(flashkit.InvalidArgumentError, match="scale_a"):
        flashkit.gemm_scaled(sq, w, trans_b=True, scale_a=sb, scale_b=np.ones((n, 1), np.float32))


def test_fp8_into_gemm_names_the_input(rng):
    a = _fp8(rng, (4, 8), "float8_e4m3fn")
    with pytest.raises(flashkit.NotSupportedError, match="^a: fp8 .*gemm_scaled"):
        flashkit.gemm(a, a, trans_b=True)
    # The result's dtype comes from c when c is given: c is named.
    f32 = ref.randn(rng, (4, 8), "float32")
    with pytest.raises(flashkit.NotSupportedError, match="^c: fp8"):
        flashkit.gemm(f32, f32, _fp8(rng, (4, 4), "float8_e4m3fn"), beta=1.0, trans_b=True)


def test_gemm_scaled_zero_d_scales(rng):
    """torch's per-tensor scales are 0-d tensors: accepted like (1,)."""
    a = _fp8(rng, (6, 32), "float8_e4m3fn")
    w = _fp8(rng, (10, 32), "float8_e5m2")
    sa = np.array(0.75, np.float32)
    sb = rng.uniform(0.5, 2.0, 10).astype(np.float32)
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=sa, scale_b=sb, out_dtype="float32")
    expected = ref.gemm(ref.f64(a) * 0.75, ref.f64(w) * ref.f64(sb)[:, None], trans_b=True)
    ref.assert_close(d, expected, "float32")


def test_gemm_batch_one_broadcasts_without_out(rng):
    """A batch-1 operand broadcasts: the result takes the other operand's batch (no out=)."""
    a = ref.randn(rng, (1, 5, 7))
    b = ref.randn(rng, (3, 7, 4))
    d = flashkit.gemm(a, b)
    assert d.shape == (3, 5, 4)
    ref.assert_close(d, ref.gemm(np.broadcast_to(a, (3, 5, 7)), b), "float32")
    c = ref.randn(rng, (1, 5, 4))
    d2 = flashkit.gemm(a, b[:1], c, beta=1.0)
    assert d2.shape == (1, 5, 4)
    with pytest.raises(flashkit.InvalidArgumentError, match="batch"):
        flashkit.gemm(ref.randn(rng, (2, 5, 7)), b)


def test_bools_are_not_numbers(rng):
    """alpha=True or softcap=True are slips: refused as bools, as ints and sizes are (before,
    float arguments read True as 1.0)."""
    a, b = ref.randn(rng, (3, 4)).astype(np.float32), ref.randn(rng, (4, 2)).astype(np.float32)
    for kw in ({"alpha": True}, {"beta": np.bool_(False)}):
        name = next(iter(kw))
        with pytest.raises(flashkit.InvalidArgumentError, match=f"{name}: .* is a bool"):
            flashkit.gemm(a, b, **kw)
    q = ref.randn(rng, (1, 3, 2, 8)).astype(np.float32)
    for kw in ({"softcap": True}, {"softmax_scale": True}):
        name = next(iter(kw))
        with pytest.raises(flashkit.InvalidArgumentError, match=f"{name}: True is a bool"):
            flashkit.attention(q, q, q, **kw)
