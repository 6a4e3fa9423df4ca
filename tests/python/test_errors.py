"""Every error category reaches Python as its exception class, with a message naming the
argument."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flashkit
import fk_reference as ref
from flashkit import capi
from flashkit.flash_attn_interface import flash_attn_func, flash_attn_varlen_func


def test_hierarchy():
    assert issubclass(flashkit.InvalidArgumentError, flashkit.FlashkitError)
    assert issubclass(flashkit.InvalidArgumentError, ValueError)
    assert issubclass(flashkit.OutOfMemoryError, MemoryError)
    for cls in (flashkit.NotSupportedError, flashkit.OutOfMemoryError, flashkit.DeviceError,
                flashkit.InternalError):
        assert issubclass(cls, flashkit.FlashkitError)
    assert flashkit.InvalidArgumentError.__module__ == "flashkit"


@pytest.mark.parametrize("status,cls", [
    (capi.FK_ERROR_INVALID_ARGUMENT, flashkit.InvalidArgumentError),
    (capi.FK_ERROR_MISALIGNED, flashkit.InvalidArgumentError),
    (capi.FK_ERROR_NOT_SUPPORTED, flashkit.NotSupportedError),
    (capi.FK_ERROR_BACKEND_UNAVAILABLE, flashkit.NotSupportedError),
    (capi.FK_ERROR_OUT_OF_MEMORY, flashkit.OutOfMemoryError),
    (capi.FK_ERROR_WORKSPACE_TOO_SMALL, flashkit.OutOfMemoryError),
    (capi.FK_ERROR_DEVICE, flashkit.DeviceError),
    (capi.FK_ERROR_KERNEL_LAUNCH, flashkit.DeviceError),
    (capi.FK_ERROR_INTERNAL, flashkit.InternalError),
])
def test_status_to_class_mapping(status, cls):
    # Device and internal errors cannot be provoked with a bad argument on the CPU backend;
    # the mapping the C layer uses for every failed call is checked here for all categories.
    e = capi.error_for_status(status, "x: message")
    assert type(e) is cls and e.status == status and str(e) == "x: message"
    assert e.status_string == capi.fk_status_string(status)


def _raises(cls, word, fn, *args, **kwargs):
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    assert word in str(info.value), f"message {str(info.value)!r} does not name {word!r}"
    return info.value.with_traceback(None)  # no frame -> info -> exception cycle (_invalid)


# --- invalid argument (100) from the C validator ------------------------------------------

def test_invalid_head_dim(rng):
    q = ref.randn(rng, (1, 4, 2, 300))
    e = _raises(flashkit.InvalidArgumentError, "q", flashkit.attention, q, q, q)
    assert "300" in str(e) and e.status == capi.FK_ERROR_SHAPE_MISMATCH


def test_invalid_dtype_mismatch(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    k = ref.randn(rng, (1, 4, 2, 16), "float16")
    e = _raises(flashkit.InvalidArgumentError, "k", flashkit.attention, q, k, k)
    assert e.status == capi.FK_ERROR_DTYPE_MISMATCH


def test_invalid_float64_input(rng):
    a = rng.standard_normal((4, 4))
    _raises(flashkit.InvalidArgumentError, "a", flashkit.gemm, a, a)


def test_invalid_gemm_inner_dimension(rng):
    a, b = ref.randn(rng, (4, 5)), ref.randn(rng, (6, 3))
    _raises(flashkit.InvalidArgumentError, "b", flashkit.gemm, a, b)


def test_invalid_beta_without_c(rng):
    a = ref.randn(rng, (4, 4))
    _raises(flashkit.InvalidArgumentError, "beta", flashkit.gemm, a, a, beta=1.0)


def test_messages_name_python_arguments(rng):
    """The C library's messages name C things (params.beta, NULL, fk_gemm's output d); what
    reaches Python names the keywords, None and out=."""
    a = ref.randn(rng, (4, 4))
    e = _raises(flashkit.InvalidArgumentError, "c: None but beta is 1", flashkit.gemm, a, a,
                beta=1.0)
    assert "params." not in str(e) and "NULL" not in str(e)
    e = _raises(flashkit.InvalidArgumentError, "out: N is 5", flashkit.gemm, a, a,
                out=np.empty((4, 5), np.float32))
    assert e.status == capi.FK_ERROR_SHAPE_MISMATCH
    _raises(flashkit.InvalidArgumentError, "must equal out's batch 3", flashkit.gemm, a, a,
            ref.randn(rng, (2, 4, 4)), beta=1.0, out=np.empty((3, 4, 4), np.float32))
    q = ref.randn(rng, (1, 4, 2, 16))
    e = _raises(flashkit.InvalidArgumentError, "softmax_scale: inf must be finite (None selects",
                flashkit.attention, q, q, q, softmax_scale=float("inf"))
    e = _raises(flashkit.InvalidArgumentError, "softcap: inf", flashkit.attention, q, q, q,
                softcap=float("inf"))
    assert "params." not in str(e)
    # FFTConv: the C output y is out=, the plan's options.x the constructor's keyword x.
    u, k = ref.randn(rng, (1, 2, 16)), ref.randn(rng, (2, 16))
    _raises(flashkit.InvalidArgumentError, "out: seqlen is 15", flashkit.FFTConv(16), u, k,
            out=np.empty((1, 2, 15), np.float32))
    _raises(flashkit.InvalidArgumentError, "out: overlaps u", flashkit.FFTConv(16), u, k, out=u)
    e = _raises(flashkit.InvalidArgumentError, "fft_size: 16 is too small",
                flashkit.FFTConv(16, fft_size=16), u, k)
    assert "options." not in str(e)


def test_invalid_negative_stride(rng):
    a = ref.randn(rng, (4, 4))[::-1]
    e = _raises(flashkit.InvalidArgumentError, "a", flashkit.gemm, a, a)
    assert e.status == capi.FK_ERROR_BAD_STRIDES


def test_invalid_window_and_softcap(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    _raises(flashkit.InvalidArgumentError, "window", flashkit.attention, q, q, q,
            window_size=(-3, 0))
    _raises(flashkit.InvalidArgumentError, "softcap", flashkit.attention, q, q, q, softcap=-1.0)
    _raises(flashkit.InvalidArgumentError, "window_size", flashkit.attention, q, q, q,
            window_size=3)
    e = _raises(flashkit.InvalidArgumentError, "window_size", flashkit.attention, q, q, q,
                window_size=(4, -2))
    assert "right -2" in str(e)


def test_nan_softmax_scale_is_refused(rng):
    """The C library reads NaN as "the default scale"; Python's default is None, so an explicit
    NaN (a config or arithmetic bug) is an error rather than a silent default."""
    q = ref.randn(rng, (1, 4, 2, 16))
    e = _raises(flashkit.InvalidArgumentError, "softmax_scale", flashkit.attention, q, q, q,
                softmax_scale=float("nan"))
    assert "None" in str(e)
    ref.assert_close(flashkit.attention(q, q, q, softmax_scale=None),
                     flashkit.attention(q, q, q, softmax_scale=0.25), "float32")


def test_invalid_cu_seqlens(rng):
    q = ref.randn(rng, (10, 2, 16))
    cu = np.array([0, 6, 4, 10], np.int32)
    _raises(flashkit.InvalidArgumentError, "cu_seqlens_q", flashkit.attention, q, q, q,
            cu_seqlens_q=cu, cu_seqlens_k=np.array([0, 4, 6, 10], np.int32))
    _raises(flashkit.InvalidArgumentError, "cu_seqlens", flashkit.attention, q, q, q,
            cu_seqlens_q=np.array([0, 10], np.int32))


def test_invalid_monarch_shapes(rng):
    x = ref.randn(rng, (3, 64))
    w1 = ref.randn(rng, (8, 8, 8))
    w2 = ref.randn(rng, (4, 8, 8))     # nb1*q = 64 != nb2*r = 32
    _raises(flashkit.InvalidArgumentError, "w2", flashkit.monarch, x, w1, w2)


def test_invalid_fftconv_shapes(rng):
    conv = flashkit.FFTConv(32)
    u = ref.randn(rng, (1, 2, 32))
    _raises(flashkit.InvalidArgumentError, "k", conv, u, ref.randn(rng, (3, 32)))
    _raises(flashkit.InvalidArgumentError, "u", conv, ref.randn(rng, (1, 2, 31)),
            ref.randn(rng, (2, 32)))


def test_invalid_fftconv_sizes_at_the_call(rng):
    # Refused when the call makes the plan (batch 0: no memory needed for 2^22 + 1 samples).
    k = ref.randn(rng, (1, 4))
    e = _raises(flashkit.InvalidArgumentError, "seqlen", flashkit.FFTConv(2**22 + 1),
                np.empty((0, 1, 2**22 + 1), np.float32), k)
    assert "2^22" in str(e) and e.status == capi.FK_ERROR_INVALID_ARGUMENT
    e = _raises(flashkit.InvalidArgumentError, "fft_size", flashkit.FFTConv(16, fft_size=2**23),
                np.empty((0, 1, 16), np.float32), k)
    assert "2^22" in str(e) and e.status == capi.FK_ERROR_INVALID_ARGUMENT
    # 2^22 itself is the largest size (circular: fft_size == seqlen).
    flashkit.FFTConv(2**22, mode="circular")(np.empty((0, 1, 2**22), np.float32), k)


def test_invalid_monarch_and_blockdiag_layouts(rng):
    x, w = ref.randn(rng, (5, 16)), ref.randn(rng, (4, 4, 4))
    strided = ref.randn(rng, (5, 32))[:, ::2]
    bias = ref.randn(rng, (32,))[::2]
    out = np.zeros((5, 32), np.float32)[:, ::2]
    for fn, args in ((flashkit.monarch, (w, w)), (flashkit.blockdiag_linear, (w,))):
        e = _raises(flashkit.InvalidArgumentError, "x", fn, strided, *args)
        assert e.status == capi.FK_ERROR_BAD_STRIDES
        e = _raises(flashkit.InvalidArgumentError, "bias", fn, x, *args, bias=bias)
        assert e.status == capi.FK_ERROR_BAD_STRIDES
        e = _raises(flashkit.InvalidArgumentError, "out", fn, x, *args, out=out)
        assert e.status == capi.FK_ERROR_BAD_STRIDES
        e = _raises(flashkit.InvalidArgumentError, "overlaps x", fn, x, *args, out=x)
        assert e.status == capi.FK_ERROR_INVALID_ARGUMENT


# --- invalid argument (100) from the Python layer -----------------------------------------

def test_invalid_python_arguments(rng):
    a = ref.randn(rng, (4, 4))
    _raises(flashkit.InvalidArgumentError, "activation", flashkit.gemm, a, a, activation="swish")
    _raises(flashkit.InvalidArgumentError, "a", flashkit.gemm, [[1.0]], a)
    _raises(flashkit.InvalidArgumentError, "q", flashkit.attention, a, a, a)   # rank 2
    _raises(flashkit.InvalidArgumentError, "device", flashkit.Context, "tpu")
    _raises(flashkit.InvalidArgumentError, "kernel_family", flashkit.Context, "cpu",
            kernel_family="sm70")
    _raises(flashkit.InvalidArgumentError, "op", flashkit.Context("cpu").select_kernel, "conv")
    _raises(flashkit.InvalidArgumentError, "dtype", flashkit.FFTConv, 8, dtype="int8")
    ro = ref.randn(rng, (4, 4))
    ro.flags.writeable = False
    _raises(flashkit.InvalidArgumentError, "out", flashkit.gemm, a, a, out=ro)


# --- not supported (200) ------------------------------------------------------------------

def test_not_supported_fp8(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rng.standard_normal((4, 4)).astype(ml_dtypes.float8_e4m3fn)
    e = _raises(flashkit.NotSupportedError, "a", flashkit.gemm, a, a)
    assert e.status == capi.FK_ERROR_NOT_SUPPORTED


def test_not_supported_fp8_everywhere_but_the_fp8_entry_points(rng):
    # Each docstring's NotSupportedError: a float8 array where only 16/32-bit floats are taken.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    f8 = ml_dtypes.float8_e4m3fn
    a, b = ref.randn(rng, (3, 5)), ref.randn(rng, (5, 4))
    q = ref.randn(rng, (1, 4, 2, 8))
    x, w = ref.randn(rng, (5, 16)), ref.randn(rng, (4, 4, 4))
    u, k = ref.randn(rng, (1, 2, 16)), ref.randn(rng, (2, 16))
    cases = [
        ("b", flashkit.gemm, (a, b.astype(f8)), {}),
        ("c", flashkit.gemm, (a, b, ref.randn(rng, (3, 4)).astype(f8)), {"beta": 1.0}),
        ("bias", flashkit.gemm, (a, b), {"bias": ref.randn(rng, (4,)).astype(f8)}),
        ("out", flashkit.gemm, (a, b), {"out": np.zeros((3, 4), f8)}),
        ("k", flashkit.attention, (q, q.astype(f8), q), {}),
        ("out", flashkit.attention, (q, q, q), {"out": np.zeros(q.shape, f8)}),
        ("x", flashkit.monarch, (x.astype(f8), w.astype(f8), w.astype(f8)), {}),
        ("w1", flashkit.monarch, (x, w.astype(f8), w), {}),
        ("bias", flashkit.monarch, (x, w, w), {"bias": ref.randn(rng, (16,)).astype(f8)}),
        ("x", flashkit.blockdiag_linear, (x.astype(f8), w.astype(f8)), {}),
        ("out", flashkit.blockdiag_linear, (x, w), {"out": np.zeros((5, 16), f8)}),
        ("k", flashkit.FFTConv(16), (u, k.astype(f8)), {}),
        ("D", flashkit.FFTConv(16), (u, k, ref.randn(rng, (2,)).astype(f8)), {}),
    ]
    for word, fn, args, kwargs in cases:
        e = _raises(flashkit.NotSupportedError, word, fn, *args, **kwargs)
        assert e.status == capi.FK_ERROR_NOT_SUPPORTED, (word, fn, str(e))


def test_not_supported_kernel_family_on_cpu():
    for family in ("generic", "sm80", "sm90"):
        e = _raises(flashkit.NotSupportedError, "kernel_family", flashkit.Context, "cpu",
                    kernel_family=family)
        assert e.status == capi.FK_ERROR_NOT_SUPPORTED and "CPU" in str(e)


def test_not_supported_backend():
    e = _raises(flashkit.NotSupportedError, "device: ", flashkit.Context, "cuda:97")
    assert e.status == capi.FK_ERROR_BACKEND_UNAVAILABLE
    assert "options." not in str(e)  # Python's argument is device=, not the C struct's field


def test_not_supported_flash_attn_arguments(rng):
    q = ref.randn(rng, (1, 4, 2, 16))
    _raises(flashkit.NotSupportedError, "dropout_p", flash_attn_func, q, q, q, dropout_p=0.1)
    _raises(flashkit.NotSupportedError, "alibi_slopes", flash_attn_func, q, q, q,
            alibi_slopes=np.ones(2, np.float32))
    qv = q[0]
    cu = np.array([0, 4], np.int32)
    _raises(flashkit.NotSupportedError, "block_table", flash_attn_varlen_func, qv, qv, qv, cu, cu,
            4, 4, block_table=np.zeros((1, 1), np.int32))


# --- out of memory (300) ------------------------------------------------------------------

def test_out_of_memory():
    # 2**40 query heads sharing one key head (no real memory: q has zero strides, out is a
    # distinct-address view far past a small buffer that is never written, placed after the
    # inputs so that it overlaps neither them nor itself): the CPU backend's per-head scratch
    # cannot be allocated. Run in a child process with a time limit so that a backend which
    # instead started computing cannot hang (or crash) the suite.
    code = textwrap.dedent("""
        import numpy as np, flashkit
        from numpy.lib.stride_tricks import as_strided
        H = 1 << 40
        buf = np.ones(3 * 64, np.float32)
        q = as_strided(buf[:64], shape=(1, 1, H, 64), strides=(0, 0, 0, 4))
        k = buf[64:128].reshape(1, 1, 1, 64)
        out = as_strided(buf[128:], shape=(1, 1, H, 64), strides=(0, 0, 256, 4),
                         writeable=True)
        try:
            flashkit.attention(q, k, k, out=out)
        except flashkit.OutOfMemoryError as e:
            print("OOM", e.status, e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OOM 300"), r.stdout + r.stderr


# --- messages come from the calling thread ------------------------------------------------

def test_error_message_is_per_thread(rng):
    import threading
    q = ref.randn(rng, (1, 4, 2, 300))
    a = ref.randn(rng, (4, 5))
    messages = {}

    def bad_gemm():
        for _ in range(50):
            try:
                flashkit.gemm(a, a)
            except flashkit.InvalidArgumentError as e:
                messages.setdefault("gemm", set()).add(str(e)[:2])

    t = threading.Thread(target=bad_gemm)
    t.start()
    for _ in range(50):
        try:
            flashkit.attention(q, q, q)
        except flashkit.InvalidArgumentError as e:
            messages.setdefault("attn", set()).add(str(e)[:2])
    t.join()
    assert messages == {"gemm": {"b:"}, "attn": {"q:"}}
