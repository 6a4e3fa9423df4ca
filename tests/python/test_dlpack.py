"""DLPack and array-interface interop: inputs from every library, outputs in the caller's."""

import numpy as np
import pytest

import flashkit
import fk_reference as ref


class DLPackOnly:
    """An array known to flashkit only through the DLPack protocol."""

    def __init__(self, arr, versioned=True):
        self.arr = arr
        self.versioned = versioned
        self.capsules = []

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        if max_version is not None and not self.versioned:
            raise TypeError("legacy producer: no max_version")
        if max_version is not None:
            cap = self.arr.__dlpack__(max_version=max_version)
        else:
            cap = self.arr.__dlpack__()
        self.capsules.append(cap)
        return cap


class ArrayInterfaceOnly:
    def __init__(self, arr):
        self.arr = arr
        self.__array_interface__ = arr.__array_interface__


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_only_producer(rng, versioned):
    a = ref.randn(rng, (6, 8))
    b = ref.randn(rng, (8, 5))
    pa, pb = DLPackOnly(a, versioned), DLPackOnly(b, versioned)
    d = flashkit.gemm(pa, pb)
    assert isinstance(d, np.ndarray)  # CPU result of an unknown library: NumPy
    ref.assert_close(d, ref.gemm(a, b), "float32")
    # flashkit read the capsules without consuming them: they keep their producer's name and
    # are released by their own destructor.
    name = "dltensor_versioned" if versioned else "dltensor"
    assert all(f'"{name}"' in repr(c) for c in pa.capsules + pb.capsules)


def test_dlpack_output_written_in_place(rng):
    a = ref.randn(rng, (4, 8))
    out = np.zeros((4, 4), np.float32)
    flashkit.gemm(a, a.T, out=DLPackOnly(out))
    ref.assert_close(out, ref.gemm(a, a.T), "float32")


def test_array_interface_only(rng):
    a = ref.randn(rng, (3, 4))
    d = flashkit.gemm(ArrayInterfaceOnly(a), ArrayInterfaceOnly(a.T.copy()))
    ref.assert_close(d, ref.gemm(a, a.T), "float32")


@pytest.mark.parametrize("dtype", ref.DTYPES)
def test_numpy_roundtrip_keeps_dtype(rng, dtype):
    x = ref.randn(rng, (2, 8, 2, 16), dtype)
    out = flashkit.attention(x, x, x)
    assert type(out) is np.ndarray and out.dtype == x.dtype


def test_numpy_views_are_not_copied(rng):
    base = ref.randn(rng, (10, 16))
    out_base = np.zeros((12, 8), np.float32)
    w = ref.randn(rng, (2, 4, 8))
    flashkit.blockdiag_linear(base[2:7], w, out=out_base[3:8])
    assert np.all(out_base[:3] == 0) and np.all(out_base[8:] == 0)
    ref.assert_close(out_base[3:8], ref.blockdiag(base[2:7], w), "float32")


# --- PyTorch / CuPy / JAX (CPU side; GPU tests are in test_gpu_torch.py) -------------------

def test_torch_cpu_roundtrip(rng):
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        q = torch.randn(2, 12, 4, 32, dtype=dtype)
        k = torch.randn(2, 12, 2, 32, dtype=dtype)
        out, lse = flashkit.attention(q, k, k, causal=True, return_lse=True)
        assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.device == q.device
        assert lse.dtype == torch.float32
        name = {torch.float32: "float32", torch.float16: "float16",
                torch.bfloat16: "bfloat16"}[dtype]
        r, r_lse = ref.attention(q.float().numpy(), k.float().numpy(), k.float().numpy(),
                                 causal=True)
        ref.assert_close(out.float().numpy(), r, name)
        ref.assert_close(lse.numpy(), r_lse, "float32", factor=10)


def test_torch_requires_grad(rng):
    torch = pytest.importorskip("torch")
    a = torch.randn(4, 4, requires_grad=True)
    with pytest.raises(flashkit.NotSupportedError, match="requires_grad"):
        flashkit.gemm(a, a)
    with torch.no_grad():
        d = flashkit.gemm(a, a)
    assert torch.allclose(d, (a @ a).detach(), atol=1e-5)


def test_torch_negative_and_conjugate_views(rng):
    """torch's lazy negation is a flag DLPack does not carry: a negative view read as memory
    gave -(a @ b) with no error. Inputs are resolved (copied); outputs are refused."""
    torch = pytest.importorskip("torch")
    a = torch.randn(4, 3, dtype=torch.complex64).conj().imag  # real, is_neg() True
    assert a.is_neg()
    b = torch.randn(3, 5)
    torch.testing.assert_close(flashkit.gemm(a, b), a.resolve_neg() @ b)
    x = torch.randn(4, 3)._neg_view()
    torch.testing.assert_close(flashkit.gemm(x, b), x.resolve_neg() @ b)
    out = torch.empty(4, 5)._neg_view()
    with pytest.raises(flashkit.InvalidArgumentError, match="out: a torch negative"):
        flashkit.gemm(torch.randn(4, 3), b, out=out)


def test_torch_unreadable_tensors_name_the_argument(rng):
    """A tensor torch cannot export (sparse) and a float8 one in an op that computes in 16/32
    bits: flashkit errors naming the argument, not torch's own exceptions."""
    torch = pytest.importorskip("torch")
    b = torch.randn(4, 4)
    with pytest.raises(flashkit.InvalidArgumentError, match="^a: its library cannot export it"):
        flashkit.gemm(b.to_sparse(), b)
    if hasattr(torch, "float8_e4m3fn"):
        with pytest.raises(flashkit.NotSupportedError, match="^a: fp8 .*gemm_scaled"):
            flashkit.gemm(b.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn))


def test_torch_subclass_is_torch(rng):
    """A torch.Tensor subclass from the user's module gets torch outputs and torch's rules."""
    torch = pytest.importorskip("torch")

    class MyT(torch.Tensor):
        pass

    a = torch.randn(4, 3).as_subclass(MyT)
    b = torch.randn(3, 5)
    d = flashkit.gemm(a, b)
    assert isinstance(d, torch.Tensor)
    torch.testing.assert_close(torch.Tensor(d), torch.Tensor(a) @ b)
    g = torch.randn(4, 3, requires_grad=True).as_subclass(MyT)
    with pytest.raises(flashkit.NotSupportedError, match="requires_grad"):
        flashkit.gemm(g, b)


def test_torch_out_counts_as_an_inplace_write(rng):
    """out= bumps the tensor's version counter as torch's own out= does, so a backward through
    values saved before the write is refused instead of silently wrong."""
    torch = pytest.importorskip("torch")
    w = torch.randn(4, 5, requires_grad=True)
    h = w * 2
    y = h.sin().sum()  # saves h for the backward
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    v0 = h._version
    with torch.no_grad():
        flashkit.gemm(a, b, out=h)
    assert h._version > v0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    # An inference tensor is written only inside inference_mode, as torch allows.
    with torch.inference_mode():
        inf_out = torch.empty(4, 5)
        flashkit.gemm(a, b, out=inf_out)
    with pytest.raises(flashkit.InvalidArgumentError, match="out: an inference tensor"):
        flashkit.gemm(a, b, out=inf_out)


def test_cupy_cpu_absent_or_roundtrip(rng):
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device for CuPy")
    except Exception:
        pytest.skip("no CUDA device for CuPy")
    try:
        flashkit.Context("cuda")
    except flashkit.NotSupportedError:
        pytest.skip("flashkit built without CUDA")
    a = cupy.asarray(ref.randn(rng, (16, 32)))
    d = flashkit.gemm(a, a.T)
    assert isinstance(d, cupy.ndarray)
    ref.assert_close(cupy.asnumpy(d), ref.gemm(cupy.asnumpy(a), cupy.asnumpy(a).T), "float32")


def test_jax_cpu_roundtrip(rng):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    cpu = jax.devices("cpu")[0]
    a_np = ref.randn(rng, (8, 16))
    a = jax.device_put(jnp.asarray(a_np), cpu)
    d = flashkit.gemm(a, a.T)
    assert isinstance(d, jax.Array) and next(iter(d.devices())) == cpu
    ref.assert_close(np.asarray(d), ref.gemm(a_np, a_np.T), "float32")


def test_packed_descriptors_match_ctypes_structs(rng):
    """The per-call descriptor buffer (struct.pack_into) holds exactly what the ctypes DLTensor
    path builds: every field of every view, including rank 0, offsets, strides and None."""
    from flashkit import _dlpack

    assert _dlpack._PACKED_LAYOUT_OK  # every 64-bit little-endian platform flashkit builds for
    base = np.asarray(ref.randn(rng, (3, 5, 7)), dtype=np.float32)
    refs = [_dlpack.as_tensor(base, "a"), None,
            _dlpack.as_tensor(base[:, 1:4:2, ::3], "b"),
            _dlpack.as_tensor(base, "c").select(1, 2),
            _dlpack.as_tensor(base[:, ::-1], "r").select(1, 3),  # negative byte offset
            _dlpack.as_tensor(np.float32(rng.standard_normal()) * np.ones((), np.float32), "d"),
            _dlpack.as_tensor(np.zeros((2, 0, 4), np.float16), "e")]
    keep = []
    packed = _dlpack.pack_descriptors(refs, keep)
    assert packed[1] is None
    for r, addr in zip(refs, packed):
        if r is None:
            continue
        mine = _dlpack.DLTensor.from_address(addr)
        theirs = _dlpack.DLTensor.from_address(r.to_c(keep))
        nd = theirs.ndim
        assert mine.ndim == nd == r.ndim
        assert (mine.data or 0) == (theirs.data or 0)
        assert (mine.device.device_type, mine.device.device_id) == \
            (theirs.device.device_type, theirs.device.device_id)
        assert (mine.dtype.code, mine.dtype.bits, mine.dtype.lanes) == \
            (theirs.dtype.code, theirs.dtype.bits, theirs.dtype.lanes)
        assert mine.byte_offset == theirs.byte_offset == r.byte_offset % (1 << 64)
        assert [mine.shape[i] for i in range(nd)] == [theirs.shape[i] for i in range(nd)]
        assert [mine.strides[i] for i in range(nd)] == [theirs.strides[i] for i in range(nd)]
        assert bool(mine.shape) and bool(mine.strides)  # never NULL, even at rank 0


def test_cached_params_keep_calls_apart(rng):
    """Calls share params structs per argument values: alternating arguments must still give
    each call its own result."""
    a = ref.randn(rng, (6, 5))
    b = ref.randn(rng, (5, 4))
    c = ref.randn(rng, (6, 4))
    for alpha, beta in [(1.0, 0.0), (0.5, 1.0), (1.0, 0.0), (-2.0, 0.5), (0.5, 1.0)]:
        d = flashkit.gemm(a, b, c, alpha=alpha, beta=beta)
        ref.assert_close(d, alpha * ref.gemm(a, b) + beta * c.astype(np.float64), "float32")
    # 0.0 and -0.0 compare equal but need structs of their own: the sign of the result's zeros
    # must be what an uncached call with that alpha gives.
    from flashkit import _ops
    fresh = {}  # keyed by repr: -0.0 == 0.0 as dict keys
    for alpha in (-0.0, 0.0):
        _ops._PARAMS.clear()
        fresh[repr(alpha)] = np.signbit(flashkit.gemm(a, b, alpha=alpha))
    _ops._PARAMS.clear()
    for alpha in (-0.0, 0.0, -0.0, 0.0):
        d = flashkit.gemm(a, b, alpha=alpha)
        assert np.all(d == 0)
        assert np.array_equal(np.signbit(d), fresh[repr(alpha)]), alpha
