"""Shared pieces of the flashkit benchmarks: the C ABI through ctypes (no Python bindings needed),
DLTensor views of torch tensors, and CUDA-event timing.

    from fkbench import Flashkit, time_ms, rotation_count, write_json

    fk = Flashkit("build-gpu", family="auto")      # folder holding libflashkit.so, or the file
    ptr = fk.dl(torch_tensor)                      # DLTensor* kept alive by fk
    fk.check(fk.lib.fk_gemm(...), "fk_gemm")       # raises with flashkit's last error message

Timing rule used by every benchmark (METHOD.md): warm-up calls, then CUDA events around each
timed call, the median; callers pass one callable per input set and `time_ms` cycles through
them so that inputs larger than L2 are read from HBM (see `rotation_count`).
"""
import ctypes
import json
import os
import statistics

import torch

# ------------------------------------------------------------------------------------------
# ctypes view of the C ABI (include/flashkit/flashkit.h, dlpack.h)
# ------------------------------------------------------------------------------------------
KDL_CUDA = 2
FK_BACKEND_CUDA = 2
FAMILIES = {"auto": 0, "generic": 2, "sm80": 3, "sm90": 4}
DL_CODES = {torch.float32: (2, 32), torch.float16: (2, 16), torch.bfloat16: (4, 16),
            torch.int32: (0, 32), torch.int64: (0, 64)}
# float8 with DLPack 1.1's codes (FK_DLPACK_FLOAT8_E4M3FN / _E5M2 in flashkit.h).
if hasattr(torch, "float8_e4m3fn"):
    DL_CODES[torch.float8_e4m3fn] = (10, 8)
    DL_CODES[torch.float8_e5m2] = (12, 8)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


class ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32), ("backend", ctypes.c_int32),
        ("device_ordinal", ctypes.c_int32), ("kernel_family", ctypes.c_int32),
        ("num_threads", ctypes.c_int32), ("flags", ctypes.c_uint32),
    ]


class Launch(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("stream", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_uint64),
    ]


def find_library(path):
    """`path` is libflashkit.so itself or a folder holding it (libkissfft sits beside it)."""
    if os.path.isdir(path):
        for name in ("libflashkit.so", "libflashkit.so.1"):
            if os.path.exists(os.path.join(path, name)):
                return os.path.abspath(os.path.join(path, name))
    return os.path.abspath(path)


class Flashkit:
    """A CUDA context of libflashkit on torch's current device, with the given kernel family."""

    def __init__(self, path, family="auto"):
        self.lib = ctypes.CDLL(find_library(path))
        L = self.lib
        L.fk_status_string.restype = ctypes.c_char_p
        L.fk_get_last_error_message.restype = ctypes.c_char_p
        opts = self.init("fk_context_options_init", ContextOptions)
        self.init("fk_launch_init", Launch)  # checks the mirror's size once
        opts.backend = FK_BACKEND_CUDA
        opts.device_ordinal = torch.cuda.current_device()
        opts.kernel_family = FAMILIES[family]
        self.family = family
        self.ctx = ctypes.c_void_p()
        self.check(L.fk_context_create(ctypes.byref(opts), ctypes.byref(self.ctx)), "fk_context_create")
        self._keep = []

    def init(self, init_name, cls):
        """A ``cls`` filled by the library's ``init_name``, once the library's struct is checked
        to be the size of this ctypes mirror: an init writes the whole C struct, so a stale
        mirror would be overrun (benchmarks/attention.py's params were, after ABI 1 grew them)."""
        init = getattr(self.lib, init_name)
        probe = (ctypes.c_uint8 * (ctypes.sizeof(cls) + 256))()
        self.check(init(probe), init_name)
        size = ctypes.c_uint32.from_buffer(probe).value  # struct_size, the struct's first field
        if size != ctypes.sizeof(cls):
            raise RuntimeError(f"{init_name}: the library's struct is {size} bytes, this "
                               f"script's {cls.__name__} {ctypes.sizeof(cls)}: update its fields "
                               "from include/flashkit/flashkit.h")
        out = cls()
        self.check(init(ctypes.byref(out)), init_name)
        return out

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {self.lib.fk_status_string(status).decode()}: "
                               f"{self.lib.fk_get_last_error_message().decode()}")

    def dl(self, t):
        """A DLTensor* describing torch tensor `t` (None for None); kept alive by this object."""
        if t is None:
            return None
        shape = (ctypes.c_int64 * t.dim())(*t.shape)
        strides = (ctypes.c_int64 * t.dim())(*t.stride())
        code, bits = DL_CODES[t.dtype]
        d = DLTensor(t.data_ptr(), DLDevice(KDL_CUDA, t.device.index or 0), t.dim(),
                     DLDataType(code, bits, 1), shape, strides, 0)
        self._keep.append((shape, strides, d))
        return ctypes.pointer(d)

    def launch(self):
        """An fk_launch_t on torch's current stream."""
        launch = Launch()
        self.check(self.lib.fk_launch_init(ctypes.byref(launch)), "fk_launch_init")
        launch.stream = torch.cuda.current_stream().cuda_stream
        self._keep.append(launch)
        return launch

    def forget(self):
        """Drop the views made so far (call between benchmark cells)."""
        self._keep = []


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------
def time_ms(fns, warmup, reps, batch=1):
    """Median milliseconds of one call, cycling through `fns` (a callable or a list of them, one
    per input set). `batch` > 1 times that many back-to-back calls between one pair of events
    and takes their mean, so that host launch gaps drop out for calls shorter than the host's
    time to issue them."""
    if callable(fns):
        fns = [fns]
    for i in range(warmup):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    j = 0
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(batch):
            fns[j % len(fns)]()
            j += 1
        e.record()
        times.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) / batch for s, e in times)



def copy_rate(nbytes=1 << 30, warmup=3, reps=15):
    """This GPU's device-to-device copy rate in bytes/s, read and write both counted (how issue
    8's 4.2 TB/s for the H200 is counted): median of `reps` copies of `nbytes`, two buffers of
    1 GiB each by default, far larger than L2. The memory-floor columns use it beside the
    issue's 4.2 TB/s, so that a run on another GPU (an H100: ~3 TB/s) is read against its own
    memory."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), warmup, reps)
    del src, dst
    torch.cuda.empty_cache()
    return 2.0 * nbytes / (ms * 1e-3)


def nvtx_profile(fn, reps, warmup=2, name="prof"):
    """Calls `fn` `warmup` times, then `reps` times inside the NVTX range `name`, so that Nsight
    Compute's --nvtx --nvtx-include "NAME/" profiles only those (benchmarks/ab/*_ncu_one.py)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def l2_bytes():
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return getattr(props, "L2_cache_size", 50 << 20)


def rotation_count(set_bytes, limit=8):
    """How many input sets to rotate so that together they are at least 3x the L2 cache."""
    return max(1, min(limit, -(-3 * l2_bytes() // max(1, set_bytes))))


def write_json(default_name, path, payload):
    """Writes `payload` to `path`, or to $OUT/default_name (./default_name without $OUT)."""
    out_path = path or os.path.join(os.environ.get("OUT", "."), default_name)
    with open(out_path, "w") as f:
        json.dump(payload, f, indent=1)
    return out_path
