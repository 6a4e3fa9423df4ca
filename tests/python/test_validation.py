"""Arguments the Python layer checks before anything reaches the C library (or is allocated):
byte order, None for required arrays, unsupported dtypes, scalar ranges, FFTConv's dtype and
the exact out= shape of monarch/blockdiag_linear. Each failure is an InvalidArgumentError whose
message starts with the argument's name."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref
from flashkit import capi
from flashkit.flash_attn_interface import (flash_attn_func, flash_attn_kvpacked_func,
                                           flash_attn_qkvpacked_func,
                                           flash_attn_varlen_qkvpacked_func)


def _invalid(prefix, fn, *args, **kwargs):
    with pytest.raises(flashkit.InvalidArgumentError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert msg.startswith(prefix), f"message {msg!r} does not start with {prefix!r}"
    # Without its traceback: that holds this frame, which holds info, which holds the
    # exception: a cycle that kept the call's arguments (contexts, plans) alive until the
    # cycle collector ran, inside some later test that records destroy calls.
    return info.value.with_traceback(None)


# --- byte order ----------------------------------------------------------------------------

@pytest.mark.parametrize("typestr", [">f4", ">f2"])
def test_big_endian_arrays_are_rejected(rng, typestr):
    a = ref.randn(rng, (4, 4)).astype(typestr)
    native = a.astype(typestr.replace(">", "="))
    e = _invalid("a: ", flashkit.gemm, a, native)
    assert "byte order" in str(e)
    _invalid("b: ", flashkit.gemm, native, a)
    _invalid("out: ", flashkit.gemm, native, native, out=np.empty((4, 4), typestr))
    q = ref.randn(rng, (1, 4, 2, 16)).astype(typestr)
    qn = q.astype(typestr.replace(">", "="))
    _invalid("v: ", flashkit.attention, qn, qn, q)
    x, w = ref.randn(rng, (3, 16)).astype(typestr), ref.randn(rng, (4, 4, 4)).astype(typestr)
    _invalid("x: ", flashkit.blockdiag_linear, x, w.astype(w.dtype.newbyteorder("=")))
    u = ref.randn(rng, (1, 2, 32)).astype(typestr)
    _invalid("u: ", flashkit.FFTConv(32), u, ref.randn(rng, (2, 32)))


def test_native_byte_order_spelled_explicitly_is_accepted(rng):
    a = ref.randn(rng, (4, 4)).astype("=f4")
    ref.assert_close(flashkit.gemm(a, a), ref.gemm(a, a), "float32")


# --- None for a required array -------------------------------------------------------------

def test_none_for_required_arrays(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    a = ref.randn(rng, (4, 4))
    w = ref.randn(rng, (4, 4, 4))
    x = ref.randn(rng, (3, 16))
    cases = [
        ("q: None", flashkit.attention, (None, q, q)),
        ("k: None", flashkit.attention, (q, None, q)),
        ("v: None", flashkit.attention, (q, q, None)),
        ("q: None", flashkit.attention, (None, None, None)),
        ("a: None", flashkit.gemm, (None, a)),
        ("b: None", flashkit.gemm, (a, None)),
        ("x: None", flashkit.monarch, (None, w, w)),
        ("w1: None", flashkit.monarch, (x, None, w)),
        ("w2: None", flashkit.monarch, (x, w, None)),
        ("x: None", flashkit.blockdiag_linear, (None, w)),
        ("w: None", flashkit.blockdiag_linear, (x, None)),
        ("u: None", flashkit.FFTConv(16), (None, ref.randn(rng, (2, 16)))),
        ("k: None", flashkit.FFTConv(16), (ref.randn(rng, (1, 2, 16)), None)),
        ("q: None", flash_attn_func, (None, q, q)),
        ("qkv: None", flash_attn_qkvpacked_func, (None,)),
        ("kv: None", flash_attn_kvpacked_func, (q, None)),
        ("qkv: None", flash_attn_varlen_qkvpacked_func, (None, np.array([0, 4], np.int32), 4)),
    ]
    for prefix, fn, args in cases:
        e = _invalid(prefix, fn, *args)
        assert e.status == capi.FK_ERROR_NULL_POINTER
    _invalid("q: None", flashkit.Context("cpu").select_kernel, "attention", None, q, q)
    _invalid("u: None", flashkit.Context("cpu").select_kernel, "fftconv", None,
             ref.randn(rng, (2, 16)))


# --- unsupported dtypes --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["complex64", "float64", "int32", "bool"])
def test_unsupported_input_dtypes_name_the_argument(rng, dtype):
    def bad(shape):
        return ref.randn(rng, shape).astype(dtype)
    q = ref.randn(rng, (1, 4, 2, 16))
    a = ref.randn(rng, (4, 4))
    x, w = ref.randn(rng, (3, 16)), ref.randn(rng, (4, 4, 4))
    u, k = ref.randn(rng, (1, 2, 16)), ref.randn(rng, (2, 16))
    cases = [
        ("q: ", flashkit.attention, (bad(q.shape), q, q), {}),
        ("k: ", flashkit.attention, (q, bad(q.shape), q), {}),
        ("a: ", flashkit.gemm, (bad(a.shape), a), {}),
        ("b: ", flashkit.gemm, (a, bad(a.shape)), {}),
        ("c: ", flashkit.gemm, (a, a, bad(a.shape)), {}),
        ("bias: ", flashkit.gemm, (a, a), {"bias": bad((4,))}),
        ("out: ", flashkit.gemm, (a, a), {"out": bad(a.shape)}),
        ("x: ", flashkit.monarch, (bad(x.shape), w, w), {}),
        ("w2: ", flashkit.monarch, (x, w, bad(w.shape)), {}),
        ("w: ", flashkit.blockdiag_linear, (x, bad(w.shape)), {}),
        ("u: ", flashkit.FFTConv(16), (bad(u.shape), k), {}),
        ("k: ", flashkit.FFTConv(16), (u, bad(k.shape)), {}),
        ("D: ", flashkit.FFTConv(16), (u, k), {"D": bad((2,))}),
    ]
    for prefix, fn, args, kwargs in cases:
        e = _invalid(prefix, fn, *args, **kwargs)
        msg = str(e)
        assert np.dtype(dtype).name in msg and "fp32, fp16 or bf16" in msg, msg
        assert e.status == capi.FK_ERROR_DTYPE_MISMATCH


def test_unsupported_cu_seqlens_dtype(rng):
    q = ref.randn(rng, (8, 2, 16))
    cu = np.array([0, 8], np.int32)
    e = _invalid("cu_seqlens_k: ", flashkit.attention, q, q, q, cu_seqlens_q=cu,
                 cu_seqlens_k=cu.astype(np.complex64))
    assert "int32" in str(e)


def test_fp8_still_reaches_the_library_as_not_supported(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rng.standard_normal((4, 4)).astype(ml_dtypes.float8_e5m2)
    with pytest.raises(flashkit.NotSupportedError, match="a: fp8"):
        flashkit.gemm(a, a)


# --- scalars out of range ------------------------------------------------------------------

def test_scalars_out_of_range(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    a = ref.randn(rng, (4, 4))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(2**40, 0))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(0, -2**31 - 1))
    _invalid("softmax_scale: ", flashkit.attention, q, q, q, softmax_scale=1e39)
    _invalid("softmax_scale: ", flashkit.attention, q, q, q, softmax_scale="big")
    _invalid("softcap: ", flashkit.attention, q, q, q, softcap=-1e39)
    _invalid("alpha: ", flashkit.gemm, a, a, alpha=1e39)
    _invalid("beta: ", flashkit.gemm, a, a, a, beta=-1e39)
    _invalid("activation: ", flashkit.gemm, a, a, activation=2**40)
    _invalid("num_threads: ", flashkit.Context, "cpu", num_threads=2**40)
    _invalid("num_threads: ", flashkit.Context, "cpu", num_threads=1.5)
    _invalid("device: ", flashkit.Context, 2**40)
    _invalid("seqlen: ", flashkit.FFTConv, 2**70)
    _invalid("fft_size: ", flashkit.FFTConv, 64, fft_size=2**70)
    _invalid("window_size: ", flash_attn_func, q, q, q,
             window_size=(2**40, 0))


def test_window_size_requires_ints(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(1.5, 2))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(np.float32(1), 2))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(1, 2, 3))
    _invalid("window_size: ", flashkit.attention, q, q, q, window_size=(True, 2))
    _invalid("seqlen: ", flashkit.FFTConv, 64.5)
    # NumPy integers are ints; the limits themselves are fine
    expect = flashkit.attention(q, q, q, window_size=(1, 0))
    got = flashkit.attention(q, q, q, window_size=(np.int64(1), np.int32(0)))
    np.testing.assert_array_equal(got, expect)
    big = flashkit.attention(q, q, q, window_size=(2**31 - 1, 2**31 - 1))
    np.testing.assert_array_equal(big, flashkit.attention(q, q, q))
    flashkit.gemm(q[0, 0], q[0, 0].T, alpha=3.4e38)


# --- FFTConv dtype -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, "float64", np.complex64, np.int32, "int8"])
def test_fftconv_dtype_checked_in_constructor(dtype):
    e = _invalid("dtype: ", flashkit.FFTConv, 64, dtype=dtype)
    assert "float32, float16 or bfloat16" in str(e)


def test_fftconv_constructor_accepts_supported_dtypes():
    for dtype in ("float32", np.float16, flashkit.bfloat16, "bf16", None):
        flashkit.FFTConv(64, dtype=dtype)


# --- exact out= shape of monarch / blockdiag_linear ----------------------------------------

def test_monarch_out_shape_must_match_exactly(rng):
    w = ref.randn(rng, (4, 4, 4))
    x = ref.randn(rng, (2, 3, 16))
    for bad in [(3, 2, 16), (6, 16), (2, 3, 4, 4), (1, 2, 3, 16)]:
        out = np.empty(bad, np.float32)
        e = _invalid("out: ", flashkit.monarch, x, w, w, out=out)
        assert str((2, 3, 16)) in str(e)
        _invalid("out: ", flashkit.blockdiag_linear, x, w, out=out)
    out = np.empty((2, 3, 16), np.float32)
    assert flashkit.blockdiag_linear(x, w, out=out) is out
    ref.assert_close(out, ref.blockdiag(x, w), "float32")


# --- workspace= ----------------------------------------------------------------------------

def test_workspace_is_accepted_by_every_operation(rng):
    """A caller workspace changes no result (the CPU backend takes no scratch; the CUDA suite
    checks that the GPU kernels carve their buffers from it): every operation, with a
    workspace of several sizes, against the float64 reference."""
    a, b = ref.randn(rng, (5, 7)), ref.randn(rng, (7, 3))
    q = ref.randn(rng, (1, 9, 2, 16))
    x, w1, w2 = ref.randn(rng, (3, 16)), ref.randn(rng, (4, 4, 4)), ref.randn(rng, (4, 4, 4))
    u, k = ref.randn(rng, (2, 3, 40)), ref.randn(rng, (3, 40))
    for ws in (np.empty(0, np.uint8), np.empty(3, np.uint8), np.empty((4, 1024), np.float32)):
        ref.assert_close(flashkit.gemm(a, b, workspace=ws), ref.gemm(a, b), "float32")
        ref.assert_close(flashkit.gemm_scaled(a, b, workspace=ws), ref.gemm(a, b), "float32")
        ref.assert_close(flashkit.attention(q, q, q, causal=True, workspace=ws),
                         ref.attention(q, q, q, causal=True)[0], "float32")
        ref.assert_close(flashkit.monarch(x, w1, w2, workspace=ws), ref.monarch(x, w1, w2),
                         "float32")
        ref.assert_close(flashkit.blockdiag_linear(x, w1, workspace=ws),
                         ref.blockdiag(x, w1), "float32")
        ref.assert_close(flashkit.FFTConv(40)(u, k, workspace=ws), ref.fftconv(u, k), "float32")
        with flashkit.Context("cpu") as ctx:
            ref.assert_close(ctx.gemm(a, b, workspace=ws), ref.gemm(a, b), "float32")
            ref.assert_close(flashkit.FFTConv(40).run(ctx, u, k, workspace=ws),
                             ref.fftconv(u, k), "float32")


def test_workspace_rules(rng):
    """Each workspace rule, with the output left untouched: read-only, non-contiguous, not an
    array."""
    a = ref.randn(rng, (4, 4))
    out = np.full((4, 4), np.nan, np.float32)
    readonly = np.empty(64, np.uint8)
    readonly.flags.writeable = False
    e = _invalid("workspace: ", flashkit.gemm, a, a, out=out, workspace=readonly)
    assert "read-only" in str(e)
    e = _invalid("workspace: ", flashkit.gemm, a, a, out=out,
                 workspace=np.empty((8, 8), np.uint8)[:, ::2])
    assert "contiguous" in str(e) and e.status == capi.FK_ERROR_BAD_STRIDES
    _invalid("workspace: ", flashkit.gemm, a, a, out=out, workspace="scratch")
    u, k = ref.randn(rng, (1, 2, 32)), ref.randn(rng, (2, 32))
    y = np.full((1, 2, 32), np.nan, np.float32)
    _invalid("workspace: ", flashkit.FFTConv(32), u, k, out=y, workspace=readonly)
    assert np.isnan(out).all() and np.isnan(y).all()


def test_workspace_size_queries_on_cpu(rng):
    """Context.workspace_size answers 0 on the CPU backend (no scratch) for every op, validates
    like the op, and refuses an unknown op."""
    a, b = ref.randn(rng, (5, 7)), ref.randn(rng, (7, 3))
    q = ref.randn(rng, (1, 9, 2, 16))
    x, w1, w2 = ref.randn(rng, (3, 16)), ref.randn(rng, (4, 4, 4)), ref.randn(rng, (4, 4, 4))
    u, k = ref.randn(rng, (2, 3, 40)), ref.randn(rng, (3, 40))
    with flashkit.Context("cpu") as ctx:
        assert ctx.workspace_size("gemm", a, b) == 0
        assert ctx.workspace_size("gemm_scaled", a, b) == 0
        assert ctx.workspace_size("attention", q, q, q, causal=True) == 0
        assert ctx.workspace_size("monarch", x, w1, w2) == 0
        assert ctx.workspace_size("blockdiag_linear", x, w1) == 0
        assert ctx.workspace_size("fftconv", u, k) == 0
        assert flashkit.FFTConv(40).workspace_size(u, k, context=ctx) == 0
        _invalid("b: ", ctx.workspace_size, "gemm", a, a)
        _invalid("op: ", ctx.workspace_size, "conv2d", a, b)
        _invalid("k: ", ctx.workspace_size, "fftconv", u, ref.randn(rng, (2, 40)))


def test_fftconv_filter_constant(rng):
    """FFTConv(filter_constant=True) (the plan flag FK_FFTCONV_FILTER_CONSTANT) gives the same
    results, for two filters at two addresses in turn; the flag must be a bool."""
    u = ref.randn(rng, (3, 4, 50))
    conv = flashkit.FFTConv(50, filter_constant=True)
    for _ in range(2):
        k = ref.randn(rng, (4, 50))
        ref.assert_close(conv(u, k), ref.fftconv(u, k), "float32")
    assert "filter_constant=True" in repr(conv)
    _invalid("filter_constant: ", flashkit.FFTConv, 50, filter_constant="yes")


def test_fftconv_filter_constant_survives_a_freed_filter(rng):
    """A filter freed by the caller before the next one is made (whose memory then often lands
    at the same address) still gets its own spectrum: the object keeps each plan's last filter
    referenced. Before it did, most calls here returned the previous filter's result."""
    u = ref.randn(rng, (1, 4, 2048))
    cached = flashkit.FFTConv(2048, filter_constant=True)
    plain = flashkit.FFTConv(2048)
    differing = 0
    for _ in range(20):
        k = ref.randn(rng, (4, 2048))
        a, b = cached(u, k), plain(u, k)
        differing += not np.array_equal(a, b)
        del k, a, b
    assert differing == 0


def test_workspace_reaches_the_launch(rng, monkeypatch):
    """workspace= becomes fk_launch_t::workspace / workspace_bytes (its data pointer plus byte
    offset, its size in bytes), and an empty one leaves the launch without a workspace."""
    seen = []
    real = capi.fk_gemm

    def spy(ctx, launch, *args):
        seen.append(None if launch is None else (launch.workspace, launch.workspace_bytes))
        return real(ctx, launch, *args)

    monkeypatch.setattr(capi, "fk_gemm", spy)
    a = ref.randn(rng, (4, 4))
    big = np.empty(1000, np.uint8)
    ws = big[24:24 + 640].view(np.float32)            # 160 floats at a byte offset of 24
    flashkit.gemm(a, a, workspace=ws)
    assert seen[-1] == (big.ctypes.data + 24, 640)
    flashkit.gemm(a, a, workspace=np.empty(0, np.float32))
    assert seen[-1] in (None, (None, 0), (0, 0))
    flashkit.gemm(a, a)
    assert seen[-1] is None or seen[-1][1] == 0


def test_workspace_must_not_overlap_the_call_tensors(rng):
    """A workspace overlapping an input or the output is refused, naming that tensor, before
    anything runs; a disjoint view of the same buffer is fine."""
    buf = np.zeros(64, np.float32)
    a = buf[:16].reshape(4, 4)
    a[:] = ref.randn(rng, (4, 4))
    out = np.full((4, 4), np.nan, np.float32)
    e = _invalid("workspace: ", flashkit.gemm, a, a, out=out, workspace=buf[8:40])
    assert "overlaps a" in str(e)
    e = _invalid("workspace: ", flashkit.gemm, a, a, out=out, workspace=out.reshape(-1)[4:])
    assert "overlaps out" in str(e)
    assert np.isnan(out[:1]).all()
    ref.assert_close(flashkit.gemm(a, a, out=out, workspace=buf[16:]), ref.gemm(a, a), "float32")
