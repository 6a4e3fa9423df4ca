"""The caller's arrays as DLTensor descriptors, and outputs made in the caller's library.

flashkit's C ABI borrows ``const DLTensor*`` views for the length of one call. This module turns
whatever the caller passed into such a view, without copying data:

* NumPy arrays (including ``ml_dtypes.bfloat16``, which NumPy cannot export through DLPack):
  read from ``__array_interface__``;
* anything with ``__dlpack__`` (PyTorch, CuPy, JAX, NumPy-likes): the producer's capsule is
  read, never renamed or consumed, and kept alive until the call returns (the capsule's own
  destructor frees it afterwards, as the DLPack protocol intends for an unconsumed capsule);
* anything with ``__cuda_array_interface__`` (Numba, older libraries): read from the dict.

Every view is copied into a ``DLTensor`` struct built here with ctypes, so this module can also
make strided sub-views (the packed ``qkv`` of FlashAttention's API) and collapse leading
dimensions without asking the producer's library for anything.
"""

import ctypes
import struct
import sys

import numpy as np
import numpy.ma

from . import _errors

# DLDeviceType / DLDataTypeCode values (dlpack.h; identical from 0.6 to 1.x).
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4
kDLComplex = 5
kDLBool = 6
kDLFloat8_e4m3fn = 10  # DLPack 1.1 numbering, as FK_DLPACK_FLOAT8_E4M3FN
kDLFloat8_e5m2 = 12  # as FK_DLPACK_FLOAT8_E5M2

_CPU_DEVICES = (kDLCPU, kDLCUDAHost)
_CUDA_DEVICES = (kDLCUDA, kDLCUDAManaged)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


# pack_descriptors() writes DLTensor structs with struct.pack_into, which is several times
# cheaper than building them through ctypes; it relies on the layout below (dlpack.h on every
# 64-bit ABI flashkit builds for) and checks it once against ctypes' own layout of the struct.
_DESC_HEAD = struct.Struct("=QiiiBBHQQQ")  # data, device, ndim, dtype, shape, strides, offset
_PACKED_LAYOUT_OK = (
    ctypes.sizeof(DLTensor) == _DESC_HEAD.size == 48
    and [getattr(DLTensor, f).offset for f, _ in DLTensor._fields_] == [0, 8, 16, 20, 24, 32, 40]
    and sys.byteorder == "little")


class _DLManagedTensor(ctypes.Structure):  # legacy capsule "dltensor"
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):  # DLPack 1.x capsule "dltensor_versioned"
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_DLPACK_FLAG_READ_ONLY = 1

_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]


# ------------------------------------------------------------------------------------------
# Data types
# ------------------------------------------------------------------------------------------

class DType:
    """A DLPack element type, with its names in the libraries flashkit meets."""

    __slots__ = ("code", "bits", "name")

    def __init__(self, code, bits, name):
        self.code, self.bits, self.name = code, bits, name

    @property
    def itemsize(self):
        return max(1, self.bits // 8)

    def numpy(self):
        """The NumPy dtype (bf16 and fp8 through ml_dtypes)."""
        if self.code == kDLBfloat and self.bits == 16:
            return np.dtype(_ml_dtypes().bfloat16)
        if self.code == kDLFloat8_e4m3fn:
            return np.dtype(_ml_dtypes().float8_e4m3fn)
        if self.code == kDLFloat8_e5m2:
            return np.dtype(_ml_dtypes().float8_e5m2)
        kind = {kDLInt: "i", kDLUInt: "u", kDLFloat: "f", kDLBool: "b"}.get(self.code)
        if kind is None:
            raise _errors.NotSupportedError(f"dtype {self.name}: no NumPy equivalent")
        return np.dtype(f"{kind}{self.itemsize}")

    def __eq__(self, other):
        return self is other or (isinstance(other, DType) and self.code == other.code and
                                 self.bits == other.bits)

    def __hash__(self):
        return hash((self.code, self.bits))

    def __repr__(self):
        return f"flashkit.dtype({self.name!r})"


float32 = DType(kDLFloat, 32, "float32")
float16 = DType(kDLFloat, 16, "float16")
bfloat16 = DType(kDLBfloat, 16, "bfloat16")
int32 = DType(kDLInt, 32, "int32")

_BY_CODE = {(d.code, d.bits): d for d in (float32, float16, bfloat16, int32)}

#: The element types flashkit computes in (inputs, outputs, weights, bias, gates, filters).
COMPUTE_DTYPES = (float32, float16, bfloat16)
#: FP8 codes are left to the C library, which reports them as FK_ERROR_NOT_SUPPORTED.
_FP8_CODES = (kDLFloat8_e4m3fn, kDLFloat8_e5m2)


def check_compute_dtype(ref):
    """Raises InvalidArgumentError (naming the argument) unless ``ref`` (a TensorRef or None)
    has one of the compute dtypes fp32/fp16/bf16 (fp8 goes on to the library, which answers
    NotSupportedError)."""
    if ref is None or ref.dtype in COMPUTE_DTYPES or ref.dtype.code in _FP8_CODES:
        return
    raise _errors.InvalidArgumentError(
        f"{ref.name}: dtype {ref.dtype.name} is not supported (expected fp32, fp16 or bf16)",
        103)


def check_scale_dtype(ref):
    """Raises InvalidArgumentError unless ``ref`` (a TensorRef or None) is float32 (the
    dequantisation scales of gemm_scaled)."""
    if ref is None or ref.dtype == float32:
        return
    raise _errors.InvalidArgumentError(
        f"{ref.name}: dtype {ref.dtype.name} is not supported (a scale must be float32)", 103)


def check_index_dtype(ref):
    """Raises InvalidArgumentError unless ``ref`` (a TensorRef or None) is int32."""
    if ref is None or ref.dtype == int32:
        return
    raise _errors.InvalidArgumentError(f"{ref.name}: dtype {ref.dtype.name} is not int32", 103)


_MaskedArray = numpy.ma.MaskedArray  # imported up front (see the import)


def compute_dtype(spec, name="dtype"):
    """as_dtype(spec), restricted to fp32/fp16/bf16 (None stays None)."""
    d = as_dtype(spec, name)
    if d is not None and d not in COMPUTE_DTYPES:
        raise _errors.InvalidArgumentError(
            f"{name}: {d.name} is not float32, float16 or bfloat16", 103)
    return d
_ALIASES = {
    "float32": float32, "fp32": float32, "f32": float32, "float": float32,
    "float16": float16, "fp16": float16, "f16": float16, "half": float16,
    "bfloat16": bfloat16, "bf16": bfloat16,
    "int32": int32,
}


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise _errors.NotSupportedError(
            "bfloat16/float8 NumPy arrays need the ml_dtypes package (pip install ml_dtypes)"
        ) from e
    return ml_dtypes


def dtype_from_code(code, bits):
    d = _BY_CODE.get((code, bits))
    if d is not None:
        return d
    names = {kDLInt: "int", kDLUInt: "uint", kDLFloat: "float", kDLBfloat: "bfloat",
             kDLComplex: "complex", kDLBool: "bool", kDLFloat8_e4m3fn: "float8_e4m3fn",
             kDLFloat8_e5m2: "float8_e5m2"}
    name = names.get(code, f"code{code}_")
    if code not in (kDLFloat8_e4m3fn, kDLFloat8_e5m2):
        name = f"{name}{bits}"
    return DType(code, bits, name)


_NUMPY_DTYPES = {}  # np.dtype -> DType, filled by dtype_from_numpy (np.dtype.name is slow)


def dtype_from_numpy(dt, name=None):
    """The DType of a NumPy dtype; ``name`` (the argument) prefixes the error for types that
    have no DLPack code."""
    dt = np.dtype(dt)
    hit = _NUMPY_DTYPES.get(dt)
    if hit is not None:
        return hit
    d = _dtype_from_numpy(dt, name)
    if dt.isnative and d.code != 255 and len(_NUMPY_DTYPES) < 64:
        _NUMPY_DTYPES[dt] = d
    return d


def _dtype_from_numpy(dt, name):
    if dt.kind == "V" or dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        table = {"bfloat16": (kDLBfloat, 16), "float8_e4m3fn": (kDLFloat8_e4m3fn, 8),
                 "float8_e5m2": (kDLFloat8_e5m2, 8)}
        if dt.name in table:
            return dtype_from_code(*table[dt.name])
        where = f"{name}: " if name else ""
        raise _errors.InvalidArgumentError(
            f"{where}dtype {dt} is not supported (flashkit takes float32, float16, bfloat16, "
            f"int32 where an index is expected, float8_e4m3fn / float8_e5m2 for "
            f"gemm_scaled's a and b, and float8_e4m3fn for attention_fp8's q, k and v)", 103)
    kind = {"f": kDLFloat, "i": kDLInt, "u": kDLUInt, "b": kDLBool}.get(dt.kind)
    if kind is None:
        # complex and objects: describe them so the library's dtype rule names them.
        return DType(255, dt.itemsize * 8, dt.name)
    return dtype_from_code(kind, dt.itemsize * 8)


def as_dtype(spec, name="dtype"):
    """Accepts a flashkit DType, a name ('float32', 'fp16', 'bf16', ...), a NumPy or ml_dtypes
    dtype, or a torch/jax dtype. ``name`` is the argument named in error messages."""
    if spec is None or isinstance(spec, DType):
        return spec
    if isinstance(spec, str):
        d = _ALIASES.get(spec.lower())
        if d is None:
            raise _errors.InvalidArgumentError(
                f"{name}: {spec!r} is not float32, float16 or bfloat16", 103)
        return d
    if type(spec).__module__.startswith("torch"):  # torch.float32 -> "float32"
        tname = str(spec).rsplit(".", 1)[-1]
        if tname not in _ALIASES:
            raise _errors.InvalidArgumentError(f"{name}: {spec} is not float32, float16 or "
                                               "bfloat16", 103)
        return _ALIASES[tname]
    try:
        dt = np.dtype(spec)
    except TypeError:
        raise _errors.InvalidArgumentError(f"{name}: cannot interpret {spec!r} as a dtype", 103)
    if not dt.isnative:  # as the string '>f4' is refused: results are in native byte order
        raise _errors.InvalidArgumentError(
            f"{name}: {dt.str!r} is not in native byte order", 103)
    return dtype_from_numpy(dt)


# ------------------------------------------------------------------------------------------
# Tensor views
# ------------------------------------------------------------------------------------------

class TensorRef:
    """A borrowed, strided view of someone else's memory, plus what keeps it alive.

    Attributes: ``name`` (argument name used in messages), ``data`` and ``byte_offset``,
    ``device_type``/``device_id`` (DLPack), ``dtype`` (DType), ``shape`` and ``strides``
    (tuples, strides in elements), ``lib`` (``"numpy"``, ``"torch"``, ``"cupy"``, ``"jax"``,
    ``"other"``), ``obj`` (the caller's object), ``keep`` (objects to hold during the call),
    ``readonly``.
    """

    __slots__ = ("name", "data", "byte_offset", "device_type", "device_id", "dtype", "shape",
                 "strides", "lib", "obj", "keep", "readonly")

    def __init__(self, name, data, byte_offset, device_type, device_id, dtype, shape, strides,
                 lib, obj, keep, readonly=False):
        self.name = name
        self.data = data or 0
        self.byte_offset = byte_offset
        self.device_type = device_type
        self.device_id = device_id
        self.dtype = dtype
        self.shape = shape = tuple(map(int, shape))
        self.strides = (tuple(map(int, strides)) if 1 not in shape and 0 not in shape
                        else _canonical_strides(shape, strides))
        self.lib = lib
        self.obj = obj
        self.keep = keep
        self.readonly = readonly

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_cuda(self):
        return self.device_type in _CUDA_DEVICES

    def device_str(self):
        return f"cuda:{self.device_id}" if self.is_cuda else "cpu"

    def _derived(self, shape, strides, byte_offset):
        return TensorRef(self.name, self.data, byte_offset, self.device_type, self.device_id,
                         self.dtype, shape, strides, self.lib, self.obj, self.keep,
                         self.readonly)

    def select(self, dim, index, name=None):
        """The sub-view ``self[..., index, ...]`` along ``dim`` (that dimension removed)."""
        dim = dim % self.ndim
        off = self.byte_offset + index * self.strides[dim] * self.dtype.itemsize
        v = self._derived(self.shape[:dim] + self.shape[dim + 1:],
                          self.strides[:dim] + self.strides[dim + 1:], off)
        if name:
            v.name = name
        return v

    def flatten_leading(self, keep_last):
        """Collapses every dimension but the last ``keep_last`` into one, when the strides
        allow a single stride for it; otherwise raises InvalidArgumentError."""
        lead = self.ndim - keep_last
        if lead == 1:
            return self
        if lead == 0:
            return self._derived((1,) + self.shape, (0,) + self.strides, self.byte_offset)
        shape, strides = self.shape[:lead], self.strides[:lead]
        if 0 in shape:
            # No rows: no stride to check, and (2, 0, n)'s strides cannot nest (0 x 16 != 16).
            row_stride = 1
            for n in self.shape[lead:]:
                row_stride *= max(n, 1)
            return self._derived((0,) + self.shape[lead:], (row_stride,) + self.strides[lead:],
                                 self.byte_offset)
        # Extents of 1 have no meaningful stride; the others must nest exactly.
        dims = [(n, st) for n, st in zip(shape, strides) if n != 1]
        for (_, outer), (n_inner, inner) in zip(dims, dims[1:]):
            if outer != inner * n_inner:
                raise _errors.InvalidArgumentError(
                    f"{self.name}: the leading dimensions {shape} cannot be merged into one "
                    f"row dimension with strides {strides}; make the array contiguous", 105)
        rows = 1
        for n in shape:
            rows *= n
        row_stride = dims[-1][1] if dims else 0
        return self._derived((rows,) + self.shape[lead:], (row_stride,) + self.strides[lead:],
                             self.byte_offset)

    def to_c(self, keep):
        """Builds the ctypes DLTensor; appends what must outlive the call to ``keep`` and
        returns the struct's address."""
        nd = self.ndim
        shape = (ctypes.c_int64 * max(nd, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*self.strides)
        # Positional construction (ctypes converts the arrays to pointers and the tuples to the
        # nested structs): about a third cheaper than assigning field by field.
        t = DLTensor(self.data or None, (self.device_type, self.device_id), nd,
                     (self.dtype.code, self.dtype.bits, 1), shape, strides, self.byte_offset)
        keep.extend((t, shape, strides, self.keep))
        return ctypes.addressof(t)


def _canonical_strides(shape, strides):
    """Strides with the meaningless ones made compact: every stride of an empty tensor, and the
    stride of each extent-1 dimension (NumPy and others leave arbitrary values, e.g. 0, there,
    which would fail the library's contiguity rules for no reason)."""
    if any(n == 0 for n in shape):
        return _compact_strides(shape)
    out = [int(s) for s in strides]
    inner = 1
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] == 1:
            out[i] = inner
        inner = out[i] * shape[i]
    return tuple(out)


def pack_descriptors(refs, keep):
    """The DLTensor addresses of ``refs`` (None stays None), all written into one buffer that is
    appended to ``keep`` with what each view must keep alive until the call returns."""
    if not _PACKED_LAYOUT_OK:
        return [None if r is None else r.to_c(keep) for r in refs]
    size = 0
    for r in refs:
        if r is not None:
            size += 48 + 16 * (len(r.shape) or 1)
    buf = ctypes.create_string_buffer(size)
    base = ctypes.addressof(buf)
    keep.append(buf)
    out, off, head = [], 0, _DESC_HEAD.pack_into
    for r in refs:
        if r is None:
            out.append(None)
            continue
        nd = len(r.shape)
        n1 = nd or 1
        addr = base + off
        dt = r.dtype
        # byte_offset is uint64 in DLTensor; a view through a negative stride (select() on a
        # reversed dimension) has a negative one, which wraps as it would in C.
        head(buf, off, r.data or 0, r.device_type, r.device_id, nd, dt.code, dt.bits, 1,
             addr + 48, addr + 48 + 8 * n1, r.byte_offset & 0xFFFFFFFFFFFFFFFF)
        if nd:
            struct.pack_into(f"={2 * nd}q", buf, off + 48, *r.shape, *r.strides)
        keep.append(r.keep)
        out.append(addr)
        off += 48 + 16 * n1
    return out


_LIB_OF_TYPE = {}  # type -> library name (looked up on every argument of every call)


def library_of(obj):
    t = type(obj)
    lib = _LIB_OF_TYPE.get(t)
    if lib is None:
        mod = t.__module__.split(".", 1)[0]
        if mod in ("numpy", "torch", "cupy", "numba"):
            lib = mod
        elif mod in ("jax", "jaxlib"):
            lib = "jax"
        else:
            # A subclass defined in the user's own module (class MyT(torch.Tensor)) is still
            # its base library's array: its outputs, streams and requires_grad rules apply.
            torch = sys.modules.get("torch")
            np_mod = sys.modules.get("numpy")
            if torch is not None and issubclass(t, torch.Tensor):
                lib = "torch"
            elif np_mod is not None and issubclass(t, np_mod.ndarray):
                lib = "numpy"
            else:
                lib = "other"
        if len(_LIB_OF_TYPE) < 256:
            _LIB_OF_TYPE[t] = lib
    return lib


def _compact_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def _check_byte_order(np_dtype, name):
    """Non-native byte order would be read as native (zero-copy): refused, not converted."""
    if not np_dtype.isnative:
        raise _errors.InvalidArgumentError(
            f"{name}: dtype {np_dtype.str!r} has non-native byte order; flashkit reads memory "
            f"in place, so convert it first (e.g. {name}.astype({np_dtype.name!r}))", 103)


def _from_numpy(arr, name):
    _check_byte_order(arr.dtype, name)
    ai = arr.__array_interface__
    dtype = dtype_from_numpy(arr.dtype, name)
    itemsize = arr.dtype.itemsize
    strides = []
    for n, s in zip(arr.shape, arr.strides):
        if s % itemsize and n > 1:
            raise _errors.InvalidArgumentError(
                f"{name}: byte stride {s} is not a multiple of the element size {itemsize}", 105)
        strides.append(s // itemsize)
    return TensorRef(name, ai["data"][0], 0, kDLCPU, 0, dtype, arr.shape, strides, "numpy", arr,
                     arr, readonly=not arr.flags.writeable)


def _read_capsule(capsule, name):
    """(DLTensor struct, read-only flag) of a DLPack capsule that is not consumed."""
    if _PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        ptr = _PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        mt = _DLManagedTensorVersioned.from_address(ptr)
        if mt.version.major != 1:
            raise _errors.NotSupportedError(
                f"{name}: DLPack version {mt.version.major}.{mt.version.minor} is not supported "
                "(flashkit reads 1.x)")
        return mt.dl_tensor, bool(mt.flags & _DLPACK_FLAG_READ_ONLY)
    if _PyCapsule_IsValid(capsule, b"dltensor"):
        ptr = _PyCapsule_GetPointer(capsule, b"dltensor")
        return _DLManagedTensor.from_address(ptr).dl_tensor, False
    raise _errors.InvalidArgumentError(
        f"{name}: __dlpack__() returned {capsule!r}, not an unused DLPack capsule")


def _export_dlpack(obj, stream):
    """Calls obj.__dlpack__, asking for DLPack 1.x and falling back to the legacy protocol."""
    kwargs = {} if stream is None else {"stream": stream}
    try:
        return obj.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:
        return obj.__dlpack__(**kwargs)


def _from_dlpack(obj, name, lib, stream):
    try:
        capsule = _export_dlpack(obj, stream)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        # The producer refused the export (torch sparse, quantized or nested tensors, sharded
        # JAX arrays, ...): its own message, under the argument's name.
        raise _errors.InvalidArgumentError(
            f"{name}: its library cannot export it through DLPack ({type(e).__name__}: {e})",
            101) from None
    t, readonly = _read_capsule(capsule, name)
    nd = t.ndim
    shape = tuple(t.shape[i] for i in range(nd))
    strides = (tuple(t.strides[i] for i in range(nd)) if t.strides
               else _compact_strides(shape))
    dtype = dtype_from_code(t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1:
        raise _errors.InvalidArgumentError(f"{name}: vector dtypes (lanes={t.dtype.lanes}) are "
                                           "not supported", 103)
    return TensorRef(name, t.data, t.byte_offset, t.device.device_type, t.device.device_id,
                     dtype, shape, strides, lib, obj, (obj, capsule), readonly)


_TORCH_DTYPES = None


def _torch_dtypes(torch):
    """torch dtype -> DType for the element types flashkit reads (others take the DLPack path,
    whose messages name them)."""
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        table = {torch.float32: float32, torch.float16: float16, torch.bfloat16: bfloat16,
                 torch.int32: int32, torch.uint8: dtype_from_code(kDLUInt, 8)}  # uint8: workspaces
        for attr, code in (("float8_e4m3fn", kDLFloat8_e4m3fn), ("float8_e5m2", kDLFloat8_e5m2)):
            if hasattr(torch, attr):
                table[getattr(torch, attr)] = dtype_from_code(code, 8)
        _TORCH_DTYPES = table
    return _TORCH_DTYPES


_TORCH_HIP = None


def _torch_is_hip(torch):
    """Whether torch is a ROCm build (its "cuda" devices are DLPack's kDLROCM)."""
    global _TORCH_HIP
    if _TORCH_HIP is None:
        _TORCH_HIP = getattr(torch.version, "hip", None) is not None
    return _TORCH_HIP


def _from_torch(obj, name):
    """A TensorRef read straight from a strided CPU or CUDA torch.Tensor (data_ptr, sizes,
    strides), or None when the tensor needs the general DLPack path (another layout or device,
    a dtype flashkit does not read, conjugate/negative views).

    This is what ``__dlpack__`` would report, without building a capsule: exporting through
    DLPack costs tens of microseconds per tensor in torch, which dominated small calls. The
    caller must launch on torch's current stream (what ``__dlpack__(stream=current)`` orders
    against is then nothing), which _Call guarantees by using this only for torch calls."""
    import torch

    if obj.layout is not torch.strided or obj.is_conj() or obj.is_neg():
        return None
    dtype = _torch_dtypes(torch).get(obj.dtype)
    if dtype is None:
        return None
    if obj.is_cuda:
        if _torch_is_hip(torch):  # ROCm builds call their devices "cuda"; DLPack's kDLROCM
            return None
        device_type, device_id = kDLCUDA, obj.get_device()
    elif obj.device.type == "cpu":
        device_type, device_id = kDLCPU, 0
    else:
        return None
    try:
        data, shape, strides = obj.data_ptr(), obj.shape, obj.stride()
    except RuntimeError:  # no storage (fake/functional) or no strides (nested): general path
        return None
    return TensorRef(name, data, 0, device_type, device_id, dtype, shape, strides, "torch", obj,
                     obj)


def _from_cai(obj, name, lib):
    cai = obj.__cuda_array_interface__
    np_dtype = np.dtype(cai["typestr"])
    _check_byte_order(np_dtype, name)
    dtype = dtype_from_numpy(np_dtype, name)
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides = _compact_strides(shape)
    else:
        strides = tuple(s // np_dtype.itemsize for s in cai["strides"])
    ptr, readonly = cai["data"]
    from . import _cuda
    dev = _cuda.pointer_device(ptr) if ptr else 0
    return TensorRef(name, ptr, 0, kDLCUDA, dev, dtype, shape, strides, lib, obj, obj,
                     bool(readonly))


def torch_bump_version(t):
    """Counts an in-place write to torch tensor ``t`` in its version counter (what torch's own
    out= and in-place ops do); inference tensors have none."""
    import torch

    if t.is_inference():
        return
    graph = getattr(torch.autograd, "graph", None)
    inc = getattr(graph, "increment_version", None) or getattr(torch._C, "_increment_version", None)
    if inc is not None:
        inc(t)


def _torch_prepare(obj, name, writable=False):
    """``obj`` ready to be read (or, ``writable``, written) through its memory: detached when
    it requires grad (refused while grad is enabled), negative and conjugate views resolved.
    torch's lazy negation (``x._neg_view()``, the imaginary part of a conjugate view) and
    conjugation are flags beside the memory that DLPack does not carry, so reading the memory
    as is would silently flip signs: an input is materialised with ``resolve_neg()`` /
    ``resolve_conj()`` (a copy), an output is refused (its memory holds the negation)."""
    import torch

    if obj.requires_grad:
        if torch.is_grad_enabled():
            raise _errors.NotSupportedError(
                f"{name}: requires_grad=True, but flashkit has no backward pass yet: call under "
                f"torch.no_grad() or pass {name}.detach()")
        obj = obj.detach()
    is_neg = getattr(obj, "is_neg", None)
    is_conj = getattr(obj, "is_conj", None)
    if (is_neg is not None and is_neg()) or (is_conj is not None and is_conj()):
        if writable:
            raise _errors.InvalidArgumentError(
                f"{name}: a torch negative or conjugate view (its memory holds the other sign) "
                f"cannot be written: pass a plain tensor and copy into the view", 100)
        obj = obj.resolve_neg().resolve_conj()
    if writable and obj.is_inference() and not torch.is_inference_mode_enabled():
        raise _errors.InvalidArgumentError(
            f"{name}: an inference tensor cannot be written outside torch.inference_mode() "
            f"(torch refuses in-place updates of it there too)", 100)
    return obj


def _dlpack_device(obj, name):
    """``obj.__dlpack_device__()`` as two ints; InvalidArgumentError naming ``name`` if it is
    not that."""
    try:
        dt, di = obj.__dlpack_device__()
        return int(dt), int(di)
    except (TypeError, ValueError) as e:
        raise _errors.InvalidArgumentError(
            f"{name}: __dlpack_device__() did not return (device_type, device_id) ints ({e})",
            101) from None


def device_of(obj, name="array"):
    """(DLDeviceType, device_id, library) of an array-like without exporting it."""
    lib = library_of(obj)
    if isinstance(obj, np.ndarray):
        return kDLCPU, 0, "numpy"
    if lib == "torch" and hasattr(obj, "data_ptr"):
        dev = obj.device  # what __dlpack_device__ reports, read without it (not on ROCm)
        if dev.type == "cuda" and not _torch_is_hip(sys.modules["torch"]):
            return kDLCUDA, dev.index, lib
        if dev.type == "cpu":
            return kDLCPU, 0, lib
    if hasattr(obj, "__dlpack_device__"):
        dt, di = _dlpack_device(obj, name)
        return dt, di, lib
    if hasattr(obj, "__cuda_array_interface__"):
        from . import _cuda
        ptr = obj.__cuda_array_interface__["data"][0]
        return kDLCUDA, (_cuda.pointer_device(ptr) if ptr else 0), lib
    if hasattr(obj, "__array_interface__"):
        return kDLCPU, 0, "numpy"
    return None


def as_tensor(obj, name, stream=None, writable=False, torch_stream=False):
    """A TensorRef for ``obj`` (argument ``name``), or None for None.

    ``stream`` is the consumer stream handed to ``__dlpack__`` for CUDA producers (DLPack's
    convention: 1 = the legacy default stream, otherwise a cudaStream_t), so the producer orders
    its pending work before flashkit's. ``torch_stream``: the call is launched on torch's
    current stream, so torch tensors are read directly (_from_torch) rather than exported.
    """
    if obj is None or isinstance(obj, TensorRef):
        return obj
    lib = library_of(obj)
    if lib == "torch" and (torch_stream or stream is None) and hasattr(obj, "data_ptr"):
        obj = _torch_prepare(obj, name, writable)
        ref = _from_torch(obj, name)
        if ref is not None:
            return ref
    if isinstance(obj, _MaskedArray):
        raise _errors.InvalidArgumentError(
            f"{name}: masked arrays are not supported (flashkit would ignore the mask); pass "
            f"{name}.filled(fill_value) or {name}.data", 103)
    if isinstance(obj, np.ndarray):
        ref = _from_numpy(obj, name)
    elif hasattr(obj, "__dlpack__"):
        if lib == "torch":
            obj = _torch_prepare(obj, name, writable)
        dev = _dlpack_device(obj, name)[0] if hasattr(obj, "__dlpack_device__") else kDLCPU
        ref = _from_dlpack(obj, name, lib, stream if dev in _CUDA_DEVICES else None)
    elif hasattr(obj, "__cuda_array_interface__"):
        ref = _from_cai(obj, name, lib)
    elif hasattr(obj, "__array_interface__"):
        try:
            arr = np.asarray(obj)
        except (TypeError, ValueError) as e:
            raise _errors.InvalidArgumentError(
                f"{name}: its __array_interface__ is not valid ({e})", 101) from None
        ref = _from_numpy(arr, name)
    else:
        raise _errors.InvalidArgumentError(
            f"{name}: expected an array (an object with __dlpack__, __cuda_array_interface__ or "
            f"__array_interface__), got {type(obj).__name__}", 101)
    if writable and ref.readonly:
        raise _errors.InvalidArgumentError(f"{name}: the output array is read-only")
    return ref


# ------------------------------------------------------------------------------------------
# Streams and outputs in the caller's library
# ------------------------------------------------------------------------------------------

def launch_stream(obj, lib, device_type, device_id):
    """The cudaStream_t (an int; 0 is the legacy default stream) that the caller's library is
    working on for a CUDA input ``obj``: PyTorch's current stream for torch tensors, CuPy's
    current stream for CuPy arrays, the producer's stream of a CUDA array interface; 0 for
    everything else and on the CPU."""
    if device_type not in _CUDA_DEVICES:
        return 0
    if lib == "torch":
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:  # the same cudaStream_t, without building a Stream object
            return int(raw(device_id))
        return int(torch.cuda.current_stream(obj.device).cuda_stream)
    if lib == "cupy":
        import cupy
        with cupy.cuda.Device(device_id):
            return int(cupy.cuda.get_current_stream().ptr)
    if not hasattr(obj, "__dlpack__"):
        cai = getattr(obj, "__cuda_array_interface__", None)
        if isinstance(cai, dict) and cai.get("stream") not in (None, 1):
            return int(cai["stream"])
    return 0


def dlpack_stream(stream):
    """DLPack's `stream` argument for a cudaStream_t (0, the legacy stream, is spelled 1)."""
    return 1 if stream == 0 else stream


def needs_host_sync(primary):
    """Whether the caller's library cannot be told about flashkit's stream, so the stream must be
    synchronised before the result is handed back (JAX, CUDA array interface producers)."""
    return primary.is_cuda and primary.lib not in ("torch", "cupy")


def empty(primary, shape, dtype, name):
    """A new array of ``shape``/``dtype`` in the library and on the device of ``primary``."""
    shape = tuple(int(s) for s in shape)
    try:
        return _empty(primary, shape, dtype, name)
    except _errors.FlashkitError:
        raise
    except MemoryError as e:
        raise _errors.OutOfMemoryError(
            f"{name}: cannot allocate the result, shape {shape} {dtype.name} ({e})", 300) from None


def _empty(primary, shape, dtype, name):
    lib = primary.lib
    if not primary.is_cuda:
        if lib == "torch":
            import torch
            return torch.empty(shape, dtype=_torch_dtype(dtype), device=primary.obj.device)
        if lib == "jax":
            return _jax_empty(primary, shape, dtype)
        return np.empty(shape, dtype=dtype.numpy())
    if lib == "torch":
        import torch
        return torch.empty(shape, dtype=_torch_dtype(dtype), device=primary.obj.device)
    if lib == "cupy":
        import cupy
        with cupy.cuda.Device(primary.device_id):
            return cupy.empty(shape, dtype=dtype.numpy())
    if lib == "jax":
        return _jax_empty(primary, shape, dtype)
    if lib == "numba":
        from numba import cuda
        return cuda.device_array(shape, dtype=dtype.numpy())
    for alloc in (_try_torch_cuda, _try_cupy):
        out = alloc(primary, shape, dtype)
        if out is not None:
            return out
    raise _errors.NotSupportedError(
        f"{name}: cannot allocate an output on {primary.device_str()} for a "
        f"{type(primary.obj).__name__} input; pass {name}= explicitly")


_TORCH_DTYPE_OF = None  # DType -> torch dtype, for outputs


def _torch_dtype(dtype):
    global _TORCH_DTYPE_OF
    table = _TORCH_DTYPE_OF
    if table is None:
        import torch
        table = _TORCH_DTYPE_OF = {float32: torch.float32, float16: torch.float16,
                                   bfloat16: torch.bfloat16, int32: torch.int32}
    if dtype not in table:
        raise _errors.NotSupportedError(f"dtype {dtype.name}: flashkit computes in float32, "
                                        "float16 or bfloat16 only")
    return table[dtype]


def _try_torch_cuda(primary, shape, dtype):
    try:
        import torch
    except ImportError:
        return None
    return torch.empty(shape, dtype=_torch_dtype(dtype), device=f"cuda:{primary.device_id}")


def _try_cupy(primary, shape, dtype):
    try:
        import cupy
    except ImportError:
        return None
    with cupy.cuda.Device(primary.device_id):
        return cupy.empty(shape, dtype=dtype.numpy())


def _jax_empty(primary, shape, dtype):
    # JAX arrays are immutable and JAX has no uninitialised allocation: a fresh zeros buffer on
    # the input's device is exported and written in place. It is referenced by nothing else.
    import jax
    import jax.numpy as jnp

    jdt = {float32: jnp.float32, float16: jnp.float16, bfloat16: jnp.bfloat16,
           int32: jnp.int32}.get(dtype)
    if jdt is None:
        raise _errors.NotSupportedError(f"dtype {dtype.name}: flashkit computes in float32, "
                                        "float16 or bfloat16 only")
    dev = next(iter(primary.obj.devices()))
    out = jax.device_put(jnp.zeros(shape, dtype=jdt), dev)
    out.block_until_ready()
    return out

