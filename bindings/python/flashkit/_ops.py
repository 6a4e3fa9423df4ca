"""The operations: argument conversion, output allocation and one C call each.

Every public function here takes the context first (None: the default context of the first
array argument's device). flashkit/__init__.py exposes them without the context; Context's
methods pass themselves.
"""

import math
import numbers
import operator
import re
import threading
import weakref

import numpy as np

from . import _dlpack, _errors, capi
from ._dlpack import float32

# ------------------------------------------------------------------------------------------
# Scalar arguments: checked here, so that SWIG never raises OverflowError/TypeError for them
# ------------------------------------------------------------------------------------------

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def int_arg(value, name, bits=32, what=None):
    """``value`` as a Python int in the signed ``bits`` range. Accepts ints and NumPy integers;
    rejects bools, floats (never truncated) and everything else. ``what`` describes the value
    in messages (default: its repr)."""
    what = what or repr(value)
    if isinstance(value, (bool, np.bool_)):
        raise _errors.InvalidArgumentError(f"{name}: {what} is a bool, not an int", 100)
    try:
        v = operator.index(value)
    except TypeError:
        raise _errors.InvalidArgumentError(
            f"{name}: {what} is not an int ({type(value).__name__})", 100) from None
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= v <= hi:
        raise _errors.InvalidArgumentError(
            f"{name}: {what} is outside the int{bits} range [{lo}, {hi}]", 100)
    return v


def float32_arg(value, name):
    """``value`` as a Python float that converts to float32 without overflow. A finite value
    beyond float32's range is refused; inf and NaN go on to the library, whose rules for them
    differ per parameter (non-finite alpha is refused; attention() refuses a NaN softmax_scale
    itself, since the C library reads NaN as "the default")."""
    if isinstance(value, (str, bytes)):
        raise _errors.InvalidArgumentError(f"{name}: {value!r} is not a number", 100)
    if isinstance(value, (bool, np.bool_)):
        # as int_arg: True is not read as 1.0 (alpha=True, softcap=True are slips, not values)
        raise _errors.InvalidArgumentError(f"{name}: {value!r} is a bool, not a number", 100)
    if isinstance(value, (complex, np.complexfloating)):
        raise _errors.InvalidArgumentError(f"{name}: {value!r} is complex; a real number is needed", 100)
    try:
        v = float(value)
    except OverflowError:
        raise _errors.InvalidArgumentError(
            f"{name}: {value!r} is outside the float32 range", 100) from None
    except (TypeError, ValueError):
        raise _errors.InvalidArgumentError(
            f"{name}: {value!r} is not a number ({type(value).__name__})", 100) from None
    if math.isfinite(v) and abs(v) > _FLOAT32_MAX:
        raise _errors.InvalidArgumentError(
            f"{name}: {v!r} is outside the float32 range (|{name}| <= {_FLOAT32_MAX:.8g})", 100)
    return v


def bool_arg(value, name):
    """``value`` as a bool: accepts bools, NumPy bools and the ints 0 and 1; refuses strings
    (``"no"`` is truthy), arrays, floats, None and other ints rather than guess."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise _errors.InvalidArgumentError(
        f"{name}: {value!r} is not a bool ({type(value).__name__})", 100)


def in_choices(value, choices):
    """``value in choices`` that is False (not TypeError) for unhashable values."""
    try:
        return value in choices
    except TypeError:
        return False


def _none_error(name):
    return _errors.InvalidArgumentError(f"{name}: None, but this array is required", 101)


_CONTEXT_MODULE = None


def _context():
    """flashkit._context (imported on first use: it imports this module)."""
    global _CONTEXT_MODULE
    if _CONTEXT_MODULE is None:
        from . import _context as module
        _CONTEXT_MODULE = module
    return _CONTEXT_MODULE


_LAUNCHES = {}  # cudaStream_t -> fk_launch_t naming it (read-only once made)
# Each fk_*_select_kernel's fk_*_workspace_size twin (same arguments; bytes instead of a name).
_WORKSPACE_SIZE_OF = {
    capi.fk_attention_select_kernel: capi.fk_attention_workspace_size,
    capi.fk_attention_fp8_select_kernel: capi.fk_attention_fp8_workspace_size,
    capi.fk_attention_kvcache_select_kernel: capi.fk_attention_kvcache_workspace_size,
    capi.fk_gemm_select_kernel: capi.fk_gemm_workspace_size,
    capi.fk_gemm_scaled_select_kernel: capi.fk_gemm_scaled_workspace_size,
    capi.fk_monarch_select_kernel: capi.fk_monarch_workspace_size,
    capi.fk_blockdiag_linear_select_kernel: capi.fk_blockdiag_linear_workspace_size,
}
_PARAMS = {}  # (kind, field values) -> params struct (read-only once made)
_CACHE_LIMIT = 256


def _zero_sign(value):
    """Tells 0.0 from -0.0 in a params key (they compare equal, but the library may see the
    sign); None for every other value."""
    try:
        return math.copysign(1.0, value) if value == 0 else None
    except TypeError:
        return None


def _launch_for(stream):
    """An fk_launch_t for ``stream`` (no workspace), shared by calls on that stream."""
    launch = _LAUNCHES.get(stream)
    if launch is None:
        launch = capi.fk_launch_t()
        capi.fk_launch_init(launch)
        launch.stream = stream
        if len(_LAUNCHES) >= _CACHE_LIMIT:
            _LAUNCHES.clear()
        _LAUNCHES[stream] = launch
    return launch


def _cached_params(key, make):
    """The params struct for ``key`` (a tuple of the checked field values), made by ``make()``
    the first time: the C calls only read it, so equal arguments can share one struct."""
    params = _PARAMS.get(key)
    if params is None:
        params = make()
        if len(_PARAMS) >= _CACHE_LIMIT:
            _PARAMS.clear()
        _PARAMS[key] = params
    return params


# The C library's messages name C things: the params struct's fields ("params.beta"), NULL,
# and fk_gemm's output "d". A Python caller passed keywords, None and out=, so the messages
# that reach Python say those (_Call.run).
_C_PARAMS = re.compile(r"\bparams\.")
_C_NULL = re.compile(r"\bNULL\b")


def _c_output_name(c_name):
    """A regex for C output argument ``c_name`` used as a name in a message ("d: ...",
    "d's batch", "y overlaps u")."""
    return re.compile(r"(?<![\w.-])" + c_name + r"(?=:|'s\b| has\b| is\b| must\b| overlaps\b)")


_C_OPTIONS = re.compile(r"\boptions\.")
# fk_context_options_t fields that Python's Context(device=...) sets.
_C_DEVICE = re.compile(r"\boptions\.(?:backend|device_ordinal)\b")
_C_GEMM_D = _c_output_name("d")
_C_FFTCONV_Y = _c_output_name("y")


def _pythonic_message(msg, out_name=None):
    """``msg`` with the C names replaced (``params.x`` / ``options.x`` are keyword ``x``,
    ``options.backend`` / ``options.device_ordinal`` are Context's ``device``);
    ``out_name``: the compiled regex of the C output argument that Python calls out=."""
    msg = _C_DEVICE.sub("device", msg)
    msg = _C_NULL.sub("None", _C_OPTIONS.sub("", _C_PARAMS.sub("", msg)))
    return out_name.sub("out", msg) if out_name is not None else msg


def _pythonic_error(e, out_name=None):
    """FlashkitError ``e`` with its message in Python's names, or ``e`` itself when nothing
    changed (raise the result ``from None`` when it is new)."""
    msg = _pythonic_message(e.message, out_name)
    return e if msg == e.message else type(e)(msg, e.status)


def _check_context(ctx):
    """A context= argument: None or a flashkit.Context."""
    if ctx is not None and not isinstance(ctx, _context().Context):
        raise _errors.InvalidArgumentError(
            f"context: {type(ctx).__name__} is not a flashkit.Context", 101)


class _Unshareable:
    """Refuses copies and pickling: a copy would share the C handles (a context's, or an
    FFTConv's cached plans) and destroy them when collected. ``_SHARE_HINT`` says what to do."""

    _SHARE_HINT = "share the object itself"

    def __copy__(self):
        raise TypeError(f"flashkit.{type(self).__name__} cannot be copied: {self._SHARE_HINT}")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce__(self):
        raise TypeError(f"flashkit.{type(self).__name__} cannot be pickled: make a new one in "
                        "the other process")


class _CtxRef:
    """A context for _context.enter_call / in_call to enter (and replace) outside a _Call."""
    __slots__ = ("ctx",)

    def __init__(self, ctx):
        self.ctx = ctx


class _Call:
    """State of one C call: the context, the launch (stream), the converted tensors, and
    everything that must stay alive until the call returns.

    ``inputs`` is a list of (name, array or None); the first ``required`` of them must not be
    None. Every input must have a compute dtype (fp32/fp16/bf16) except those named in
    ``index_args`` (int32). All of this is checked before anything is allocated.
    """

    def __init__(self, ctx, inputs, required=1, index_args=(), scale_args=(), fp8_args=()):
        for name, obj in inputs[:required]:
            if obj is None:
                raise _none_error(name)
        _check_context(ctx)
        index = 0
        for i, (_, o) in enumerate(inputs):
            if o is not None:
                index = i
                break
        primary_name, primary = inputs[index]
        self.primary_name = primary_name
        if isinstance(primary, _dlpack.TensorRef):
            dev = (primary.device_type, primary.device_id, primary.lib)
            raw = primary.obj
        else:
            dev = _dlpack.device_of(primary, primary_name) if primary is not None else None
            raw = primary
        if dev is None:
            # as_tensor raises the message that names the argument.
            _dlpack.as_tensor(primary, primary_name)
            raise _errors.InvalidArgumentError(f"{primary_name}: not an array", 101)
        device_type, device_id, lib = dev
        if lib == "torch":
            raw = _dlpack._torch_prepare(raw, primary_name)
        self.stream = _dlpack.launch_stream(raw, lib, device_type, device_id)
        self.dl_stream = _dlpack.dlpack_stream(self.stream)
        self.keep = []
        self.torch_outs = []  # torch out= arrays (finish() bumps their version counters)
        # A torch call runs on torch's current stream: its tensors are read without a DLPack
        # export (_dlpack._from_torch).
        self.torch_stream = lib == "torch"
        self.refs = [_dlpack.as_tensor(o, n, self.dl_stream, torch_stream=self.torch_stream)
                     for n, o in inputs]
        for (name, _), ref in zip(inputs, self.refs):
            if name in index_args:
                _dlpack.check_index_dtype(ref)
            elif name in scale_args:
                _dlpack.check_scale_dtype(ref)
            elif name in fp8_args:
                if ref is not None and ref.dtype.name != "float8_e4m3fn":
                    raise _errors.InvalidArgumentError(
                        f"{name}: dtype {ref.dtype.name} must be float8_e4m3fn", 103)
            else:
                _dlpack.check_compute_dtype(ref)
        self.primary = self.refs[index]
        self.implicit_ctx = ctx is None
        self.device_type, self.device_id = device_type, device_id
        if ctx is None:
            ctx = _context().context_for(device_type, device_id)
        self.ctx = ctx
        self.launch = _launch_for(self.stream) if self.stream else None
        self.ws_range = None  # [start, end) of a workspace= array, for the overlap check

    def use_workspace(self, workspace):
        """Points this call's fk_launch_t at ``workspace`` (fk_launch_t::workspace): any
        writable, contiguous array on the call's device, whose bytes the call may use as
        scratch before it allocates any. None leaves the launch as it is."""
        if workspace is None:
            return
        ref = _dlpack.as_tensor(workspace, "workspace", self.dl_stream,
                                torch_stream=self.torch_stream)
        if ref.readonly:
            raise _errors.InvalidArgumentError(
                "workspace: the array is read-only (the call writes scratch data into it)", 100)
        # CUDA device memory and managed memory are both "cuda:N"; host memory (pageable or
        # pinned) is "cpu": what the library itself accepts together.
        here = (True, ref.device_id) if ref.is_cuda else (False, 0)
        want = (True, self.primary.device_id) if self.primary.is_cuda else (False, 0)
        if here != want:
            raise _errors.InvalidArgumentError(
                f"workspace: on {ref.device_str()}, but the call runs on "
                f"{self.primary.device_str()} (a workspace must be on the call's device)", 106)
        if ref.strides != _dlpack._compact_strides(ref.shape):
            raise _errors.InvalidArgumentError(
                f"workspace: strides {ref.strides} for shape {ref.shape} are not contiguous "
                f"(the call uses it as one byte range)", 105)
        nbytes = ref.dtype.itemsize
        for extent in ref.shape:
            nbytes *= extent
        launch = capi.fk_launch_t()
        capi.fk_launch_init(launch)
        launch.stream = self.stream or 0
        if nbytes:
            launch.workspace = ref.data + ref.byte_offset
            launch.workspace_bytes = nbytes
            self.ws_range = (launch.workspace, launch.workspace + nbytes)
        self.keep.append(ref)
        self.launch = launch

    def _check_workspace_overlap(self, refs):
        """A workspace that overlaps a tensor of the call would have the call's scratch
        overwrite it: refused here, naming the tensor, before any conversion (the C library
        refuses it too, "launch.workspace: overlaps <tensor>")."""
        lo, hi = self.ws_range
        for ref in refs:
            if ref is None or not ref.data or 0 in ref.shape:
                continue
            start = ref.data + ref.byte_offset
            span = sum((n - 1) * st for n, st in zip(ref.shape, ref.strides)) + 1
            end = start + span * ref.dtype.itemsize
            if start < hi and lo < end:
                raise _errors.InvalidArgumentError(
                    f"workspace: overlaps {ref.name} (the call writes scratch data into it)", 100)

    def output(self, name, user_obj, shape, dtype, dtype_from=None, fp8_hint=True,
               exact_dtype=False):
        """(object returned to the caller, its TensorRef): ``user_obj`` (out=) or a new array in
        the caller's library and device. ``dtype_from``: the argument whose dtype ``dtype``
        is (default: the call's first array), named if it cannot be a result's dtype.
        ``exact_dtype``: a given ``user_obj`` must have ``dtype`` itself (lse is float32)."""
        if user_obj is None:
            if dtype not in _dlpack.COMPUTE_DTYPES:
                # The result would take an argument's dtype that flashkit does not compute in
                # (float8 into gemm or attention): say which, before any library is asked to
                # allocate it.
                src = dtype_from or self.primary_name
                if dtype.code in _dlpack._FP8_CODES:
                    hint = ("; float8 inputs go to attention_fp8 and gemm_scaled"
                            if fp8_hint else "")
                    raise _errors.NotSupportedError(
                        f"{src}: fp8 ({dtype.name}) is not taken by this call, whose result has "
                        f"{src}'s dtype (float32, float16 or bfloat16){hint}",
                        capi.FK_ERROR_NOT_SUPPORTED)
                raise _errors.NotSupportedError(
                    f"{src}: dtype {dtype.name} cannot be the result's dtype, which is float32, "
                    f"float16 or bfloat16", capi.FK_ERROR_NOT_SUPPORTED)
            obj = _dlpack.empty(self.primary, shape, dtype, name)
            ref = _dlpack.as_tensor(obj, name, self.dl_stream, torch_stream=self.torch_stream)
        else:
            obj = user_obj
            ref = _dlpack.as_tensor(obj, name, self.dl_stream, writable=True,
                                    torch_stream=self.torch_stream)
            if exact_dtype and ref.dtype != dtype:
                raise _errors.InvalidArgumentError(
                    f"{name}: dtype {ref.dtype.name} must be {dtype.name}",
                    capi.FK_ERROR_DTYPE_MISMATCH)
            _dlpack.check_compute_dtype(ref)
            if ref.lib == "torch":
                self.torch_outs.append(obj)
        return obj, ref

    def addrs(self, refs):
        """The DLTensor addresses of ``refs`` (None for None), valid until finish(); first
        checks that a workspace overlaps none of them."""
        if self.ws_range is not None:
            self._check_workspace_overlap(refs)
        return _dlpack.pack_descriptors(refs, self.keep)

    def run(self, select, select_fn, run_fn, params, *args):
        """``select_fn(handle, params, *args)`` (the variant name) when ``select`` is True, its
        fk_*_workspace_size twin (bytes) when it is ``"workspace"``, else
        ``run_fn(handle, launch, params, *args)`` and finish(); each while the context is held,
        so that close() on another thread waits for it (Context._enter_call)."""
        entered = [False]
        try:
            h = self._enter(entered)
            if select == "workspace":
                return _WORKSPACE_SIZE_OF[select_fn](h, params, *args)
            if select:
                return select_fn(h, params, *args)
            run_fn(h, self.launch, params, *args)
        except _errors.FlashkitError as e:
            err = _pythonic_error(e, _C_GEMM_D if run_fn in (capi.fk_gemm, capi.fk_gemm_scaled)
                                  else None)
            if err is e:
                raise
            raise err from None
        finally:
            # Leave what was entered even when an asynchronous exception (Ctrl-C) lands at the
            # call below: it is held back and raised once the count has dropped (a context left
            # counted as in use would never be destroyed by close()).
            pending = None
            while entered[0]:
                try:
                    self.ctx._leave_call(entered)
                except BaseException as e:  # noqa: B036 (re-raised below)
                    pending = e
            if pending is not None:
                raise pending
        self.finish()
        return None

    def _enter(self, entered):
        """Enters this call's context (_context.enter_call: a default context closed after this
        call resolved it is replaced by the new default)."""
        return _context().enter_call(self, entered,
                                     self._default_ctx if self.implicit_ctx else None)

    def _default_ctx(self):
        return _context().context_for(self.device_type, self.device_id)

    def finish(self):
        if _dlpack.needs_host_sync(self.primary):
            from . import _cuda
            _cuda.stream_synchronize(self.stream)
        self.keep.clear()
        # A torch out= was written in place: bump its version counter as torch's own out=
        # does, so that autograd refuses a backward through values saved before the write
        # ("modified by an inplace operation") instead of using the new ones.
        for t in self.torch_outs:
            _dlpack.torch_bump_version(t)
        self.torch_outs.clear()


def _expect_rank(ref, ranks, layout):
    if ref is not None and ref.ndim not in ranks:
        raise _errors.InvalidArgumentError(
            f"{ref.name}: rank {ref.ndim} {ref.shape}; expected {layout}", 104)


# ------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------

def _window(window_size):
    # A sequence (tuple, list, array): not a set or dict, whose order is not the caller's.
    if isinstance(window_size, (set, frozenset, dict)) or not hasattr(window_size, "__len__"):
        pair = None
    else:
        try:
            pair = tuple(window_size)
        except TypeError:
            pair = None
    if pair is None or len(pair) != 2:
        raise _errors.InvalidArgumentError(
            f"window_size: {window_size!r} is not a pair (left, right) of ints", 100)
    sides = tuple(int_arg(w, "window_size", what=f"{side} {w!r}")
                  for side, w in zip(("left", "right"), pair))
    for side, w in zip(("left", "right"), sides):
        if w < -1:
            raise _errors.InvalidArgumentError(
                f"window_size: {side} {w} is below -1 (-1 means unbounded on that side)", 100)
    return sides


def _attention_params(softmax_scale, causal, window_size, softcap, maxima=(0, 0)):
    """The fk_attention_params_t of attention() and attention_kvcache(), after checking the
    scalar arguments (shared by equal arguments, _cached_params)."""
    left, right = _window(window_size)
    if softmax_scale is None:
        softmax_scale = math.nan  # the C library's "default" (1 / sqrt(head_dim))
    else:
        softmax_scale = float32_arg(softmax_scale, "softmax_scale")
        if math.isnan(softmax_scale):
            raise _errors.InvalidArgumentError(
                "softmax_scale: NaN (pass None for the default 1/sqrt(head_dim))", 100)
        if math.isinf(softmax_scale):
            raise _errors.InvalidArgumentError(
                f"softmax_scale: {softmax_scale} must be finite (None selects "
                "1/sqrt(head_dim))", 100)
    softcap = float32_arg(softcap, "softcap")
    causal = bool_arg(causal, "causal")

    def make():
        params = capi.fk_attention_params_t()
        capi.fk_attention_params_init(params)
        params.softmax_scale = softmax_scale
        params.causal = 1 if causal else 0
        params.window_size_left = left
        params.window_size_right = right
        params.softcap = softcap
        params.max_seqlen_q, params.max_seqlen_k = maxima
        return params
    # NaN (the default scale) never equals itself as a key: spelled out instead.
    scale_key = "default" if math.isnan(softmax_scale) else softmax_scale
    return _cached_params(("attention", scale_key, _zero_sign(softmax_scale), causal, left,
                           right, softcap, _zero_sign(softcap)) + tuple(maxima), make)


def _attention_form(qr, vr, cq, ck, softmax_scale, causal, window_size, softcap, return_lse,
                    max_seqlen_q, max_seqlen_k):
    """The checks attention and attention_fp8 share: (lse shape, params, return_lse)."""
    varlen = cq is not None or ck is not None
    if varlen:
        layout = "(total, nheads, head_dim) with cu_seqlens"
        _expect_rank(qr, (3,), layout)
        _expect_rank(vr, (3,), layout)
        lse_shape = (qr.shape[1], qr.shape[0])
    else:
        layout = "(batch, seqlen, nheads, head_dim)"
        if qr is not None and qr.ndim == 3:
            layout += ("; a rank-3 (total, nheads, head_dim) q is the packed varlen form, which "
                       "takes cu_seqlens_q and cu_seqlens_k")
        _expect_rank(qr, (4,), layout)
        _expect_rank(vr, (4,), layout)
        lse_shape = (qr.shape[0], qr.shape[2], qr.shape[1])
    return_lse = bool_arg(return_lse, "return_lse")
    maxima = []
    for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        # Passed on (fk_attention_params_t): given, the CUDA backend does not read cu_seqlens
        # on the host, so the call does not wait for the GPU. None means not given (0).
        value = 0 if value is None else int_arg(value, name, bits=64)
        if value < 0:
            raise _errors.InvalidArgumentError(f"{name}: {value} is negative", 100)
        maxima.append(value if varlen else 0)
    params = _attention_params(softmax_scale, causal, window_size, softcap, tuple(maxima))
    return lse_shape, params, return_lse


def attention(ctx, q, k, v, *, softmax_scale=None, causal=False, window_size=(-1, -1),
              softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
              max_seqlen_k=None, return_lse=False, out=None, lse=None, workspace=None,
              _select=False):
    call = _Call(ctx, [("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_seqlens_q),
                       ("cu_seqlens_k", cu_seqlens_k)], required=3,
                 index_args=("cu_seqlens_q", "cu_seqlens_k"))
    qr, kr, vr, cq, ck = call.refs
    lse_shape, params, return_lse = _attention_form(
        qr, vr, cq, ck, softmax_scale, causal, window_size, softcap, return_lse, max_seqlen_q,
        max_seqlen_k)

    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, qr.shape[:-1] + vr.shape[-1:], qr.dtype)
    return_lse = return_lse or lse is not None
    lse_obj, lser = (call.output("lse", lse, lse_shape, float32, exact_dtype=True) if return_lse
                     else (None, None))
    args = call.addrs((qr, kr, vr, cq, ck, outr, lser))
    name = call.run(_select, capi.fk_attention_select_kernel, capi.fk_attention_forward,
                    params, *args)
    if _select:
        return name
    return (out_obj, lse_obj) if return_lse else out_obj


def attention_fp8(ctx, q, k, v, *, descale_q=None, descale_k=None, descale_v=None,
                  softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                  cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                  return_lse=False, out=None, lse=None, workspace=None, _select=False):
    for name, value in (("descale_q", descale_q), ("descale_k", descale_k), ("descale_v", descale_v)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # A number has no device: the factors are read on q's device.
            raise _errors.InvalidArgumentError(
                f"{name}: a Python number is refused (the factors are an array on q's device); "
                f"for one factor s pass a broadcast view, e.g. np.broadcast_to(np.float32(s), "
                f"(batch, nheads_k)) or torch.tensor(s, device=q.device).expand(batch, nheads_k)",
                101)
    call = _Call(ctx, [("q", q), ("k", k), ("v", v), ("descale_q", descale_q),
                       ("descale_k", descale_k), ("descale_v", descale_v),
                       ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)],
                 required=3, index_args=("cu_seqlens_q", "cu_seqlens_k"),
                 scale_args=("descale_q", "descale_k", "descale_v"), fp8_args=("q", "k", "v"))
    qr, kr, vr, dqr, dkr, dvr, cq, ck = call.refs
    lse_shape, params, return_lse = _attention_form(
        qr, vr, cq, ck, softmax_scale, causal, window_size, softcap, return_lse, max_seqlen_q,
        max_seqlen_k)
    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, qr.shape, _dlpack.bfloat16, exact_dtype=True)
    return_lse = return_lse or lse is not None
    lse_obj, lser = (call.output("lse", lse, lse_shape, float32, exact_dtype=True) if return_lse
                     else (None, None))
    args = call.addrs((qr, kr, vr, dqr, dkr, dvr, cq, ck, outr, lser))
    name = call.run(_select, capi.fk_attention_fp8_select_kernel, capi.fk_attention_fp8_forward,
                    params, *args)
    if _select:
        return name
    return (out_obj, lse_obj) if return_lse else out_obj


def _full_int32(primary, shape, value, name):
    """An int32 array of ``shape`` filled with ``value``, where ``primary`` (a TensorRef) lives:
    NumPy for host memory, else the library of ``primary`` (torch or CuPy), queued on its
    current stream, the stream of the call."""
    if not primary.is_cuda:
        return np.full(shape, value, dtype=np.int32)
    if primary.lib == "torch":
        import torch
        return torch.full(shape, value, dtype=torch.int32, device=primary.obj.device)
    if primary.lib == "cupy":
        import cupy
        with cupy.cuda.Device(primary.device_id):
            return cupy.full(shape, value, dtype=cupy.int32)
    raise _errors.NotSupportedError(
        f"{name}: an int is broadcast only for host, torch and CuPy arrays; pass an int32 "
        f"array of shape (batch,) on {primary.device_str()}", 200)


def attention_kvcache(ctx, q, k_cache, v_cache, cache_seqlens=None, block_table=None, *,
                      softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                      return_lse=False, out=None, lse=None, workspace=None, _select=False):
    seqlens_int = None
    if isinstance(cache_seqlens, (int, np.integer)):  # FlashAttention's int form: broadcast
        seqlens_int = int_arg(cache_seqlens, "cache_seqlens")
        if seqlens_int < 0:
            raise _errors.InvalidArgumentError(
                f"cache_seqlens: {seqlens_int} is negative (a number of keys)", 100)
        cache_seqlens = None
    call = _Call(ctx, [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                       ("cache_seqlens", cache_seqlens), ("block_table", block_table)],
                 required=3, index_args=("cache_seqlens", "block_table"))
    qr, kr, vr, sl, bt = call.refs
    layout = "(batch, seqlen, nheads, head_dim)"
    _expect_rank(qr, (4,), layout)
    cache_layout = ("(num_blocks, page_block_size, nheads_k, head_dim) with block_table"
                    if bt is not None else "(batch, seqlen_cache, nheads_k, head_dim)")
    _expect_rank(kr, (4,), cache_layout)
    _expect_rank(vr, (4,), cache_layout)
    params = _attention_params(softmax_scale, causal, window_size, softcap)
    return_lse = bool_arg(return_lse, "return_lse")
    if seqlens_int is not None:
        # One int for every sequence: said as such (the C check would name "entry 0" of the
        # array built from it). Capacity: the cache's rows, or table columns x page rows.
        if bt is None:
            capacity = kr.shape[1]
        elif len(bt.shape) == 2:
            capacity = bt.shape[1] * kr.shape[1]
        else:
            capacity = None  # a malformed table: the C check names it
        if capacity is not None and seqlens_int > capacity:
            raise _errors.InvalidArgumentError(
                f"cache_seqlens: {seqlens_int} (an int, for every sequence) is more than the "
                f"cache holds per sequence ({capacity} keys)", 100)
        arr = _full_int32(call.primary, (qr.shape[0],), seqlens_int, "cache_seqlens")
        call.keep.append(arr)
        sl = _dlpack.as_tensor(arr, "cache_seqlens", call.dl_stream,
                               torch_stream=call.torch_stream)

    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, qr.shape[:-1] + vr.shape[-1:], qr.dtype)
    return_lse = return_lse or lse is not None
    lse_obj, lser = (call.output("lse", lse, (qr.shape[0], qr.shape[2], qr.shape[1]), float32,
                                     exact_dtype=True)
                     if return_lse else (None, None))
    args = call.addrs((qr, kr, vr, sl, bt, outr, lser))
    name = call.run(_select, capi.fk_attention_kvcache_select_kernel,
                    capi.fk_attention_kvcache_forward, params, *args)
    if _select:
        return name
    return (out_obj, lse_obj) if return_lse else out_obj


# ------------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------------

_ACTIVATIONS = {
    None: capi.FK_ACTIVATION_NONE,
    "none": capi.FK_ACTIVATION_NONE,
    "relu": capi.FK_ACTIVATION_RELU,
    "gelu": capi.FK_ACTIVATION_GELU_ERF,
    "gelu_erf": capi.FK_ACTIVATION_GELU_ERF,
    "gelu_tanh": capi.FK_ACTIVATION_GELU_TANH,
}


def _activation(activation):
    if isinstance(activation, (int, np.integer)) and not isinstance(activation, bool):
        # a capi.FK_ACTIVATION_* value; the library checks which ones exist
        return int_arg(activation, "activation")
    key = activation.lower() if isinstance(activation, str) else activation
    if not in_choices(key, _ACTIVATIONS):
        raise _errors.InvalidArgumentError(
            f"activation: {activation!r} is not None, 'relu', 'gelu' (erf), 'gelu_erf' or "
            "'gelu_tanh'", 100)
    return _ACTIVATIONS[key]


def _gemm_shape_and_params(ar, br, cr, trans_a, trans_b, alpha, beta, activation):
    """The result's shape and the fk_gemm_params_t shared by gemm and gemm_scaled."""
    trans_a, trans_b = bool_arg(trans_a, "trans_a"), bool_arg(trans_b, "trans_b")
    _expect_rank(ar, (2, 3), "(M, K) or (batch, M, K)" if not trans_a else
                 "(K, M) or (batch, K, M)")
    _expect_rank(br, (2, 3), "(K, N) or (batch, K, N)" if not trans_b else
                 "(N, K) or (batch, N, K)")
    _expect_rank(cr, (2, 3), "(M, N) or (batch, M, N)")
    m = ar.shape[-1] if trans_a else ar.shape[-2]
    n = br.shape[-2] if trans_b else br.shape[-1]
    # The result's batch: the first batch other than 1 among a, b, c (a batch of 1 broadcasts,
    # as in the C library), or 1 when every batched operand has batch 1.
    batches = [r.shape[0] for r in (ar, br, cr) if r is not None and r.ndim == 3]
    batch = next((bt for bt in batches if bt != 1), 1)
    shape = ((batch,) if batches else ()) + (m, n)

    key = ("gemm", trans_a, trans_b, float32_arg(alpha, "alpha"), float32_arg(beta, "beta"),
           _activation(activation), _zero_sign(alpha), _zero_sign(beta))

    def make():
        params = capi.fk_gemm_params_t()
        capi.fk_gemm_params_init(params)
        params.trans_a = 1 if trans_a else 0
        params.trans_b = 1 if trans_b else 0
        params.alpha, params.beta, params.activation = key[3:6]
        return params
    return shape, _cached_params(key, make)


def gemm(ctx, a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, bias=None,
         activation=None, out=None, workspace=None, _select=False):
    call = _Call(ctx, [("a", a), ("b", b), ("c", c), ("bias", bias)], required=2)
    ar, br, cr, biasr = call.refs
    shape, params = _gemm_shape_and_params(ar, br, cr, trans_a, trans_b, alpha, beta, activation)
    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, shape, cr.dtype if cr is not None else ar.dtype,
                                "c" if cr is not None else "a")
    args = call.addrs((ar, br, cr, biasr, outr))
    name = call.run(_select, capi.fk_gemm_select_kernel, capi.fk_gemm, params, *args)
    return name if _select else out_obj


def _fold_scalar_scale(scale, name, alpha):
    """A per-tensor scale given as a Python or NumPy real number: (None, alpha * scale formed
    in float32), the same factor the library would form; anything else: (scale, alpha)."""
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        return scale, alpha
    value = float32_arg(scale, name)
    if not math.isfinite(value):
        raise _errors.InvalidArgumentError(f"{name}: {value} must be finite", 100)
    av = float32_arg(alpha, "alpha")
    if not math.isfinite(av):  # the library's rule for alpha, said before folding into it
        raise _errors.InvalidArgumentError(f"alpha: {av} must be finite", 100)
    with np.errstate(over="ignore", under="ignore"):
        folded = float(np.float32(av) * np.float32(value))
    if not math.isfinite(folded):
        raise _errors.InvalidArgumentError(
            f"{name}: {value} times alpha {av} (and any scale folded before it) overflows "
            f"float32; pass the scales as float32 arrays to have the library form the factor",
            100)
    return None, folded


def _drop_unit_axis(ref, column):
    """torch._scaled_mm's row-wise scales are 2-D, ``(M, 1)`` for a (``column``) and ``(1, N)``
    for b (and ``(1, 1)`` per tensor): the same values as flashkit's ``(M,)`` / ``(N,)`` /
    ``(1,)``, as a view of the same memory (no copy, so nothing is freed before the call reads
    it). Any other 2-D shape (a row vector for a, a column for b: swapped scales) is left for
    the library, which refuses a rank-2 scale naming it."""
    if ref is not None and ref.ndim == 2 and ref.shape[1 if column else 0] == 1:
        keep = 0 if column else 1
        return ref._derived((ref.shape[keep],), (ref.strides[keep],), ref.byte_offset)
    return ref


def gemm_scaled(ctx, a, b, c=None, *, scale_a=None, scale_b=None, alpha=1.0, beta=0.0,
                trans_a=False, trans_b=False, bias=None, activation=None, out=None,
                out_dtype=None, workspace=None, _select=False):
    scale_a, alpha = _fold_scalar_scale(scale_a, "scale_a", alpha)
    scale_b, alpha = _fold_scalar_scale(scale_b, "scale_b", alpha)
    call = _Call(ctx, [("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("c", c),
                       ("bias", bias)], required=2, scale_args=("scale_a", "scale_b"))
    ar, br, sar, sbr, cr, biasr = call.refs
    sar, sbr = _drop_unit_axis(sar, column=True), _drop_unit_axis(sbr, column=False)
    shape, params = _gemm_shape_and_params(ar, br, cr, trans_a, trans_b, alpha, beta, activation)
    if out_dtype is not None:
        result_dtype = _dlpack.compute_dtype(out_dtype, "out_dtype")
        # c and out have the result's dtype: a conflict is out_dtype's, named before the
        # library would name c (out not given) or out_dtype were silently passed over (given).
        if cr is not None and cr.dtype != result_dtype:
            raise _errors.InvalidArgumentError(
                f"out_dtype: {result_dtype.name} differs from c's dtype {cr.dtype.name} (c has "
                "the result's dtype)", 103)
    elif cr is not None:
        result_dtype = cr.dtype
    elif ar.dtype in _dlpack.COMPUTE_DTYPES:
        result_dtype = ar.dtype
    else:
        result_dtype = _dlpack.bfloat16  # fp8 inputs: bf16 result, as torch._scaled_mm's usual
    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, shape, result_dtype,
                                "out_dtype" if out_dtype is not None else
                                ("c" if cr is not None else "a"), fp8_hint=False)
    if out is not None and out_dtype is not None and outr.dtype != result_dtype:
        raise _errors.InvalidArgumentError(
            f"out_dtype: {result_dtype.name} differs from out's dtype {outr.dtype.name} (give "
            "one of them)", 103)
    args = call.addrs((ar, br, sar, sbr, cr, biasr, outr))
    name = call.run(_select, capi.fk_gemm_scaled_select_kernel, capi.fk_gemm_scaled, params,
                    *args)
    return name if _select else out_obj


# ------------------------------------------------------------------------------------------
# Monarch and block-diagonal linear
# ------------------------------------------------------------------------------------------

def _expect_out_shape(outr, shape, rule):
    """The library sees x and out with their leading dimensions merged, so a differently shaped
    out of the same size would pass there: the exact shape is checked here."""
    if outr.shape != tuple(shape):
        raise _errors.InvalidArgumentError(
            f"out: shape {outr.shape} is not {tuple(shape)} ({rule})", 104)


def _monarch_params():
    params = capi.fk_monarch_params_t()
    capi.fk_monarch_params_init(params)
    return params


def monarch(ctx, x, w1, w2, *, bias=None, out=None, workspace=None, _select=False):
    call = _Call(ctx, [("x", x), ("w1", w1), ("w2", w2), ("bias", bias)], required=3)
    xr, w1r, w2r, biasr = call.refs
    _expect_rank(w1r, (3,), "(nblocks1, q, p)")
    _expect_rank(w2r, (3,), "(nblocks2, s, r)")
    if xr.ndim < 1:
        _expect_rank(xr, (2,), "(tokens, n)")
    n_out = w2r.shape[0] * w2r.shape[1]
    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, xr.shape[:-1] + (n_out,), xr.dtype)
    _expect_out_shape(outr, xr.shape[:-1] + (n_out,), "x.shape[:-1] + (nblocks2 * s,)")
    args = call.addrs((xr.flatten_leading(1), w1r, w2r, biasr,
                                   outr.flatten_leading(1)))
    name = call.run(_select, capi.fk_monarch_select_kernel, capi.fk_monarch,
                    _monarch_params(), *args)
    return name if _select else out_obj


def blockdiag_linear(ctx, x, w, *, bias=None, out=None, workspace=None, _select=False):
    call = _Call(ctx, [("x", x), ("w", w), ("bias", bias)], required=2)
    xr, wr, biasr = call.refs
    _expect_rank(wr, (3,), "(nblocks, q, p)")
    if xr.ndim < 1:
        _expect_rank(xr, (2,), "(tokens, nblocks * p)")
    n_out = wr.shape[0] * wr.shape[1]
    call.use_workspace(workspace)  # checked before any output is allocated
    out_obj, outr = call.output("out", out, xr.shape[:-1] + (n_out,), xr.dtype)
    _expect_out_shape(outr, xr.shape[:-1] + (n_out,), "x.shape[:-1] + (nblocks * q,)")
    args = call.addrs((xr.flatten_leading(1), wr, biasr, outr.flatten_leading(1)))
    name = call.run(_select, capi.fk_blockdiag_linear_select_kernel, capi.fk_blockdiag_linear,
                    _monarch_params(), *args)
    return name if _select else out_obj


# ------------------------------------------------------------------------------------------
# FFT convolution
# ------------------------------------------------------------------------------------------

_MODES = {
    "causal": capi.FK_FFTCONV_CAUSAL,
    "circular": capi.FK_FFTCONV_CIRCULAR,
    "bidirectional": capi.FK_FFTCONV_BIDIRECTIONAL,
}


def _gone(ctx):
    """True for a context that is collected (None) or closed."""
    return ctx is None or ctx.closed


class FFTConv(_Unshareable):
    """Long convolution of each channel with its own filter, by FFT (Fu et al. 2023,
    "FlashFFTConv", section 3: the FFT as Monarch matrix products; Hyena, Poli et al. 2023).

    On CUDA, fp16/bf16 calls with short rows and a large batch (256 <= seqlen <= 1024, batch
    >= 24, fp16 only without a pregate; a window measured on the H200, docs/design.md) run
    instead as a Toeplitz matrix product on the tensor cores (kernel
    ``cuda.sm80.fftconv_direct``; on Hopper, calls with batch >= 64 take
    ``cuda.sm90.fftconv_direct``, the same product on warpgroup MMAs, gated ones where its
    streamed form runs them: seqlen a multiple of 8, 16-byte-aligned rows), which was faster there:
    same result within the library's tested bounds, bf16 plans with bf16 operands, no filter
    spectrum (so ``filter_constant`` changes nothing for those calls).

    Args:
        seqlen (int): sequence length ``L`` of ``u``.
        fft_size (int | None): FFT length, a power of two; None (or 0, the C library's
            spelling) picks the smallest one the mode needs for the filter length met at call
            time.
        mode (str): ``"causal"`` (linear: ``y[t] = sum_{s<=t} k[s] v[t-s]``; needs
            ``fft_size >= L + min(filter_len, L) - 1``), ``"circular"`` (period ``fft_size``) or
            ``"bidirectional"`` (centred odd filter ``filter_len = 2R + 1``:
            ``y[t] = sum_{j=-R..R} k[R+j] v[t-j]``; M2-BERT's sequence mixer).
        dtype: dtype of ``u``, ``y`` and the gates (``"float32"``, ``"float16"``,
            ``"bfloat16"``, or such a NumPy/ml_dtypes/torch dtype; anything else raises here);
            None takes ``u``'s dtype.
        filter_constant (bool): the caller promises that a filter's values never change
            between calls (the plan flag FK_FFTCONV_FILTER_CONSTANT): the CUDA kernels then
            compute each filter's spectrum once and cache it, keyed on the filter's address,
            shape and strides, instead of recomputing it on every call (measured on the H200:
            +0.05 ms per call at L 1K, +0.24 ms at L 4K for 768 channels). Right for inference
            with fixed weights; leave it False when the filter is updated in place (training).
            The filter's address stands for its values: a buffer refilled in place silently
            gets the spectrum of earlier values. (The object keeps each plan's last filter
            referenced, so a filter freed by the caller cannot hand its address to a new one
            before the plan has seen the new one; a filter generated per forward pass is then
            correct but pays for a new spectrum on every call, so leave the flag False there.) A plan holds one filter's spectrum
            at a time, so use one FFTConv object per layer with a persistent filter tensor
            (several filters in turn through one object recompute on every change, and under
            CUDA graph capture raise NotSupportedError). Default False.

    Coming from FlashFFTConv's ``FlashFFTConv(seqlen, dtype)`` module: its ``seqlen`` is the FFT
    length (inputs up to half of it for a causal convolution), where flashkit's first argument
    is the input length ``L`` and ``fft_size`` the FFT length, so ``FlashFFTConv(2 * L)``
    becomes ``FFTConv(L, fft_size=2 * L)`` (or ``FFTConv(L)``, which picks it). Its forward is
    ``(u, k, pregate, postgate)``; here the third positional argument is ``D``, so pass the
    gates by keyword: ``conv(u, k, pregate=pre, postgate=post)``.

    Calling it, ``conv(u, k, D=None, pregate=None, postgate=None, *, out=None,
    workspace=None)``:

    * ``u``: ``(batch, channels, seqlen)``, fp32/fp16/bf16, last dimension contiguous;
    * ``k``: ``(channels, filter_len)``, fp32/fp16/bf16 (need not match ``u``), last dimension
      contiguous;
    * ``D``: optional ``(channels,)`` skip term, fp32/fp16/bf16, contiguous;
      ``pregate``/``postgate``: optional, like ``u`` (shape and dtype);
    * ``out``: optional ``(batch, channels, seqlen)`` in the plan's dtype, last dimension
      contiguous, not overlapping any input;
    * returns ``y = postgate * (conv(pregate * u, k) + D * (pregate * u))`` (each factor only if
      given), ``(batch, channels, seqlen)`` in ``u``'s library and device, or ``out``;
    * ``workspace``: optional scratch array on the call's device (flashkit's module notes);
    * every array on the call's device (another: InvalidArgumentError, status 106), its data
      aligned to its element size (status 107; no other alignment is required: 16-byte
      aligned rows only choose the faster kernels); strides in elements, non-negative.

    The C plan (twiddles, scratch) is made on first use for each (context, channels,
    filter_len, dtype) and reused. Plans are not evicted: an object fed many different shapes
    keeps one plan per shape until ``close()`` (use one FFTConv per layer shape in a
    long-running server). Plans belong to their context: closing the context destroys them
    first, and a later call on that context raises InvalidArgumentError. CUDA graphs
    (``torch.cuda.graph``): make one call with the same arguments, finished, before the capture
    (the first call builds the plan's tables; under capture it raises NotSupportedError), and
    keep this object and its context alive while a graph that captured it may be replayed (the
    graph reads the plan's tables by address). Raises InvalidArgumentError here for a bad
    mode or dtype, a seqlen or fft_size that is not an int, a negative seqlen, an fft_size that
    is not a power of two; and at the call (where the plan is made) for a seqlen above 2^22,
    an fft_size above 2^22 or too small for the mode and filter length, a seqlen and
    filter_len whose mode needs an fft_size above 2^22 (causal with ``filter_len == seqlen``:
    any seqlen above 2^21), ``channels x filter_len`` (k's two extents) above 2^61, mismatched
    shapes or dtypes, a last dimension that is not contiguous, an out that overlaps an input,
    a ``k`` with no taps (``filter_len`` 0: status 104), an array on another device or not
    aligned to its element size. NotSupportedError at the call for a float8 array;
    OutOfMemoryError, DeviceError for scratch or plan tables that could not be allocated, or a
    CUDA error.
    """

    _SHARE_HINT = "share the object, or make a new one"

    def __init__(self, seqlen, fft_size=None, mode="causal", dtype=None, *,
                 filter_constant=False):
        if not in_choices(mode, _MODES):
            raise _errors.InvalidArgumentError(
                f"mode: {mode!r} is not 'causal', 'circular' or 'bidirectional'", 100)
        seqlen = int_arg(seqlen, "seqlen", bits=64)
        if seqlen < 0:
            raise _errors.InvalidArgumentError(f"seqlen: {seqlen} is negative", 100)
        self.seqlen = seqlen
        self.fft_size = None if fft_size is None else int_arg(fft_size, "fft_size", bits=64)
        # The rules that need no call arguments are checked here (the C library would say the
        # same at the first call, as options.fft_size); "too small for the filter" waits for
        # the call, which knows filter_len.
        if self.fft_size is not None and self.fft_size != 0 and (
                self.fft_size < 0 or self.fft_size & (self.fft_size - 1)):
            raise _errors.InvalidArgumentError(
                f"fft_size: {self.fft_size} is not a power of two (or None / 0 to pick one)", 100)
        self.mode = mode
        self.dtype = _dlpack.compute_dtype(dtype, "dtype")
        self.filter_constant = bool_arg(filter_constant, "filter_constant")
        # (id(ctx), channels, filter_len, dtype) -> (weakref to ctx, token, plan). Weak, so that
        # this object does not keep every context it ran on alive (their plans are theirs and
        # go with them); an entry whose context is gone or closed is stale: a new context may
        # reuse the id. Stale entries are dropped when a plan is made.
        self._plans = {}
        # filter_constant: the filter object of each plan's last call, kept referenced so that
        # its memory cannot be freed and handed to a new filter (torch's caching allocator,
        # NumPy's malloc reuse addresses at once) while the plan's cached spectrum is keyed on
        # that address. Same keys as _plans.
        self._filters = {}
        self._lock = threading.Lock()
        # filter_constant: serialises each call with the record of its filter (see _run);
        # re-entrant for a log callback or a filter's __del__ that calls this object.
        self._run_lock = threading.RLock()

    def _plan(self, ctx, channels, filter_len, dtype, handle=None):
        """The plan for (ctx, channels, filter_len, dtype), cached. ``handle``: the C context
        of a call that has entered ``ctx`` (Context._enter_call); such a call finishes normally
        when another thread closes ``ctx`` meanwhile (Context.close()), on its cached plan or on
        one made for it and destroyed with the context when the last call leaves."""
        if ctx.closed and handle is None:
            # Forget the plans of the closed context (it destroyed them) and say why.
            with self._lock:
                gone = []  # filters released after the lock
                for key in [key for key, e in self._plans.items() if e[0]() is ctx]:
                    del self._plans[key]
                    gone.append(self._filters.pop(key, None))
            del gone
            ctx.handle  # raises InvalidArgumentError("context: used after close()")
        key = (id(ctx), channels, filter_len, dtype)
        stale = []  # (filters of) stale entries, released after the lock
        with self._lock:
            entry = self._plans.get(key)
            if entry is not None and entry[0]() is not ctx:
                entry = None  # a collected context's id, now another's: its plan is gone
            if entry is None:
                for k in [k for k, e in self._plans.items() if _gone(e[0]())]:
                    del self._plans[k]
                    stale.append(self._filters.pop(k, None))
        del stale
        if entry is None:
            # Made without self._lock held (its error is logged, and a log callback may call
            # this object); a plan another thread registered meanwhile wins, ours is dropped.
            opts = capi.fk_fftconv_plan_options_t()
            capi.fk_fftconv_plan_options_init(opts)
            opts.mode = _MODES[self.mode]
            opts.channels = channels
            opts.seqlen = self.seqlen
            opts.filter_len = filter_len
            opts.fft_size = self.fft_size or 0
            opts.flags = capi.FK_FFTCONV_FILTER_CONSTANT if self.filter_constant else 0
            dl = capi.DLDataType()
            dl.code, dl.bits, dl.lanes = dtype.code, dtype.bits, 1
            opts.dtype = dl
            token, plan = ctx._create_fftconv_plan(opts, handle)
            if token is None:  # ctx closed meanwhile: the plan serves this call only
                return plan
            mine = (weakref.ref(ctx), token, plan)
            with self._lock:
                entry = self._plans.get(key)
                if entry is None or entry[0]() is not ctx:
                    entry = self._plans[key] = mine
            if entry is not mine:
                ctx._destroy_fftconv_plan(token)
        return entry[2]

    def _run(self, ctx, u, k, D, pregate, postgate, out, select, workspace=None):
        call = _Call(ctx, [("u", u), ("k", k), ("D", D), ("pregate", pregate),
                           ("postgate", postgate)], required=2)
        ur, kr, dr, prer, postr = call.refs
        _expect_rank(ur, (3,), "(batch, channels, seqlen)")
        _expect_rank(kr, (2,), "(channels, filter_len)")
        if kr.shape[1] == 0 and self.seqlen > 0:  # the C plan would read 0 as "filter_len = seqlen"
            raise _errors.InvalidArgumentError(
                "k: filter_len is 0 (no taps); a filter needs at least 1", 104)
        if ur.shape[2] != self.seqlen:  # before a plan is made for the call (it would be cached)
            raise _errors.InvalidArgumentError(
                f"u: seqlen is {ur.shape[2]} but the plan gives {self.seqlen}", 104)
        call.use_workspace(workspace)  # checked before any output is allocated
        out_obj, outr = call.output("out", out, ur.shape, self.dtype or ur.dtype)
        args = call.addrs((ur, kr, dr, prer, postr, outr))
        if call.ctx.closed and not call.implicit_ctx:
            self._plan(call.ctx, 0, 0, None)  # forgets its plans, raises "used after close()"
        # Plans destroyed (by close() of this object or the context) while the call holds the
        # context are destroyed when it returns, not under it.
        dtype = self.dtype or ur.dtype
        entered = [False]
        try:
            # A default context closed before the call enters it is replaced (_Call._enter);
            # one closed after it lets the call finish on it (_plan's handle).
            h = call._enter(entered)
            plan = self._plan(call.ctx, ur.shape[1], kr.shape[1], dtype, h)
            if select == "workspace":
                return capi.fk_fftconv_workspace_size(plan, *args)
            if select:
                return capi.fk_fftconv_select_kernel(plan, *args)
            if not self.filter_constant:
                capi.fk_fftconv_forward(plan, call.launch, *args)
            else:
                # The call and the record of its filter in one step per object, so that the
                # filter kept is the one whose spectrum the plan cached last (two threads'
                # calls could otherwise record in the other order). kr holds the memory the
                # library read (a resolved torch view's copy included).
                key = (id(call.ctx), ur.shape[1], kr.shape[1], dtype)
                with self._run_lock:
                    capi.fk_fftconv_forward(plan, call.launch, *args)
                    with self._lock:
                        # The previous filter is released after the locks (its __del__ may
                        # call this object). Only the cached plan's filter is recorded: a plan
                        # made for this call alone (its context closed meanwhile) has no
                        # entry whose removal would drop the record.
                        previous = None
                        entry = self._plans.get(key)
                        if entry is not None and entry[2] is plan:
                            previous = self._filters.get(key)
                            self._filters[key] = kr
                del previous
        except _errors.FlashkitError as e:
            err = _pythonic_error(e, _C_FFTCONV_Y)  # y is out=
            if err is e:
                raise
            raise err from None
        finally:
            pending = None  # as in _Call.run
            while entered[0]:
                try:
                    call.ctx._leave_call(entered)
                except BaseException as e:  # noqa: B036 (re-raised below)
                    pending = e
            if pending is not None:
                raise pending
        call.finish()
        return out_obj

    def __call__(self, u, k, D=None, pregate=None, postgate=None, *, out=None, workspace=None):
        """Runs the plan on the default context: ``y = postgate * (conv(pregate * u, k) + D *
        (pregate * u))`` with ``u`` ``(batch, channels, seqlen)``, ``k`` ``(channels,
        filter_len)``, ``D`` ``(channels,)`` and the gates of ``u``'s shape; returns ``out``
        (``u``'s shape and dtype). Every argument's shape, dtype, layout and error is in the
        class docstring (``help(flashkit.FFTConv)``)."""
        return self._run(None, u, k, D, pregate, postgate, out, False, workspace)

    def run(self, context, u, k, D=None, pregate=None, postgate=None, *, out=None,
            workspace=None):
        """Like calling the object, on an explicit flashkit.Context."""
        return self._run(context, u, k, D, pregate, postgate, out, False, workspace)

    def select_kernel(self, u, k, D=None, pregate=None, postgate=None, *, out=None,
                      context=None):
        """Name of the kernel variant a call with these arguments would run (validated like the
        call, same errors; nothing runs). ``context``: a flashkit.Context, or None for the
        default context of ``u``'s device."""
        return self._run(context, u, k, D, pregate, postgate, out, True)

    def workspace_size(self, u, k, D=None, pregate=None, postgate=None, *, out=None,
                       context=None):
        """Bytes of ``workspace=`` with which a call with these arguments allocates no
        scratch (fk_fftconv_workspace_size: on the GPU, the per-call filter spectrum of a plan
        without ``filter_constant``, and the four-step intermediates above fft_size 8192 on
        the generic kernel, and up to 256 KB per multiprocessor at fft_size 65536 on
        ``cuda.sm80.fftconv_reg``; 0 on the CPU). Without ``out=`` a temporary output is
        allocated for the validation. ``context``: a flashkit.Context, or None for the default
        context of ``u``'s device. Errors as the call's."""
        return self._run(context, u, k, D, pregate, postgate, out, "workspace")

    def resolved_fft_size(self, channels, filter_len=None, context=None):
        """The fft_size (int, points) the plan for ``(channels, filter_len)`` uses after
        defaulting, without running anything.

        Args:
            channels (int): channels ``H`` (k's first extent), >= 0.
            filter_len (int | None): taps per channel (k's second extent), >= 1; None means
                ``seqlen``.
            context: a flashkit.Context, or None for the CPU default context (the rule does
                not depend on the device).

        Raises:
            InvalidArgumentError: channels or filter_len not an int or negative, filter_len
                0, an fft_size given to the constructor that is too small for the mode and
                filter_len, sizes whose mode needs an fft_size above 2^22, ``channels x
                filter_len`` above 2^61, a context closed before the call (status 100).
        """
        from ._context import default_context, in_call
        _check_context(context)
        ctx = context or default_context("cpu")
        channels = int_arg(channels, "channels", bits=64)
        filter_len = int_arg(self.seqlen if filter_len is None else filter_len, "filter_len",
                             bits=64)
        if filter_len == 0 and self.seqlen > 0:  # the C plan would read 0 as "= seqlen"
            raise _errors.InvalidArgumentError(
                "filter_len: 0 (no taps); a filter needs at least 1", 100)
        if ctx.closed and context is not None:
            self._plan(ctx, 0, 0, None)  # forgets its plans, raises "used after close()"
        opts = capi.fk_fftconv_plan_options_t()
        capi.fk_fftconv_plan_options_init(opts)
        owner = _CtxRef(ctx)
        with in_call(owner, None if context is not None else lambda: default_context("cpu")) as h:
            plan = self._plan(owner.ctx, channels, filter_len, self.dtype or float32, h)
            capi.fk_fftconv_plan_get_options(plan, opts)
        return opts.fft_size

    def close(self):
        """Destroys the cached C plans (done automatically when the object is collected, and by
        Context.close() for the plans on that context)."""
        with self._lock:
            plans, self._plans = self._plans, {}
            filters, self._filters = self._filters, {}  # released after the lock
        del filters
        for ref, token, _plan in plans.values():
            ctx = ref()
            if ctx is not None:  # a collected context destroyed its plans
                ctx._destroy_fftconv_plan(token)  # nothing when the context destroyed it already

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"flashkit.FFTConv(seqlen={self.seqlen}, fft_size={self.fft_size}, "
                f"mode={self.mode!r}, dtype={self.dtype.name if self.dtype else None}, "
                f"filter_constant={self.filter_constant})")


def _select_fftconv(ctx, u, k, D=None, pregate=None, postgate=None, *, fft_size=None,
                    mode="causal", dtype=None, out=None, workspace=None, _select=True):
    if u is None:
        raise _none_error("u")
    shape = tuple(getattr(u, "shape", ()))
    if len(shape) != 3:
        _expect_rank(_dlpack.as_tensor(u, "u"), (3,), "(batch, channels, seqlen)")
    conv = FFTConv(shape[2], fft_size=fft_size, mode=mode, dtype=dtype)
    try:
        return conv._run(ctx, u, k, D, pregate, postgate, out, _select, workspace)
    finally:
        conv.close()


def _selector(fn, mode=True):
    def select(ctx, *args, **kwargs):
        return fn(ctx, *args, _select=mode, **kwargs)
    return select


SELECTORS = {
    "attention": _selector(attention),
    "attention_fp8": _selector(attention_fp8),
    "attention_kvcache": _selector(attention_kvcache),
    "gemm": _selector(gemm),
    "gemm_scaled": _selector(gemm_scaled),
    "monarch": _selector(monarch),
    "blockdiag_linear": _selector(blockdiag_linear),
    "fftconv": _select_fftconv,
}

# Context.workspace_size(op, ...): the same validation, the fk_*_workspace_size answer.
WORKSPACE_SIZES = {
    "attention": _selector(attention, "workspace"),
    "attention_fp8": _selector(attention_fp8, "workspace"),
    "attention_kvcache": _selector(attention_kvcache, "workspace"),
    "gemm": _selector(gemm, "workspace"),
    "gemm_scaled": _selector(gemm_scaled, "workspace"),
    "monarch": _selector(monarch, "workspace"),
    "blockdiag_linear": _selector(blockdiag_linear, "workspace"),
    "fftconv": _selector(_select_fftconv, "workspace"),
}
