"""The two CUDA driver calls the Python layer needs, through ctypes (no CUDA Python package).

Used only for producers that flashkit cannot hand its stream to: the device of a
``__cuda_array_interface__`` pointer, and a stream synchronisation before a result goes back to
a library (JAX) that does not know which stream flashkit used.
"""

import ctypes

from . import _errors

_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
_lib = None


def _driver():
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise _errors.DeviceError(f"CUDA driver (libcuda.so.1) not found: {e}", 400) from e
        lib.cuInit.argtypes = [ctypes.c_uint]
        lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
        _check(lib.cuInit(0), "cuInit")
        _lib = lib
    return _lib


def _check(result, what):
    if result != 0:
        raise _errors.DeviceError(f"{what} failed with CUresult {result}", 400)


def pointer_device(ptr):
    """CUDA device ordinal that owns device pointer ``ptr``."""
    lib = _driver()
    ordinal = ctypes.c_int(0)
    _check(lib.cuPointerGetAttribute(ctypes.byref(ordinal), _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                     ctypes.c_void_p(ptr)), "cuPointerGetAttribute")
    return ordinal.value


def stream_synchronize(stream):
    """Waits for the work queued on ``stream`` (an int cudaStream_t; 0 is the legacy stream)."""
    _check(_driver().cuStreamSynchronize(ctypes.c_void_p(stream or None)), "cuStreamSynchronize")
