"""The operations: argument conversion, output allocation and one C call each.

Every public function here takes the context first (None: the default context of the first
array argument's device). flashkit/__init__.py exposes them without the context; Context's
methods pass themselves.
"""

import math
import threading

from . import _dlpack, _errors, capi
from ._dlpack import float32


class _Call:
    """State of one C call: the context, the launch (stream), the converted tensors, and
    everything that must stay alive until the call returns."""

    def __init__(self, ctx, inputs):
        index = next((i for i, (_, o) in enumerate(inputs) if o is not None), 0)
        primary_name, primary = inputs[index]
        if isinstance(primary, _dlpack.TensorRef):
            dev = (primary.device_type, primary.device_id, primary.lib)
            raw = primary.obj
        else:
            dev = _dlpack.device_of(primary) if primary is not None else None
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
        self.refs = [_dlpack.as_tensor(o, n, self.dl_stream) for n, o in inputs]
        self.primary = self.refs[index]
        if ctx is None:
            from ._context import context_for
            ctx = context_for(device_type, device_id)
        self.ctx = ctx
        self.launch = None
        if self.stream:
            self.launch = capi.fk_launch_t()
            capi.fk_launch_init(self.launch)
            self.launch.stream = self.stream

    def output(self, name, user_obj, shape, dtype):
        """(object returned to the caller, its TensorRef): ``user_obj`` (out=) or a new array in
        the caller's library and device."""
        if user_obj is None:
            obj = _dlpack.empty(self.primary, shape, dtype, name)
            ref = _dlpack.as_tensor(obj, name, self.dl_stream)
        else:
            obj = user_obj
            ref = _dlpack.as_tensor(obj, name, self.dl_stream, writable=True)
        return obj, ref

    def addr(self, ref):
        return None if ref is None else ref.to_c(self.keep)

    def finish(self):
        if _dlpack.needs_host_sync(self.primary):
            from . import _cuda
            _cuda.stream_synchronize(self.stream)
        self.keep.clear()


def _expect_rank(ref, ranks, layout):
    if ref is not None and ref.ndim not in ranks:
        raise _errors.InvalidArgumentError(
            f"{ref.name}: rank {ref.ndim} {ref.shape}; expected {layout}", 104)


# ------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------

def _window(window_size):
    try:
        left, right = (int(w) for w in window_size)
    except (TypeError, ValueError):
        raise _errors.InvalidArgumentError(
            f"window_size: {window_size!r} is not a pair (left, right) of ints", 100) from None
    return left, right


def attention(ctx, q, k, v, *, softmax_scale=None, causal=False, window_size=(-1, -1),
              softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
              max_seqlen_k=None, return_lse=False, out=None, _select=False):
    call = _Call(ctx, [("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_seqlens_q),
                       ("cu_seqlens_k", cu_seqlens_k)])
    qr, kr, vr, cq, ck = call.refs
    varlen = cq is not None or ck is not None
    if varlen:
        layout = "(total, nheads, head_dim) with cu_seqlens"
        _expect_rank(qr, (3,), layout)
        _expect_rank(vr, (3,), layout)
        lse_shape = (qr.shape[1], qr.shape[0])
    else:
        layout = "(batch, seqlen, nheads, head_dim)"
        _expect_rank(qr, (4,), layout)
        _expect_rank(vr, (4,), layout)
        lse_shape = (qr.shape[0], qr.shape[2], qr.shape[1])
    left, right = _window(window_size)

    params = capi.fk_attention_params_t()
    capi.fk_attention_params_init(params)
    params.softmax_scale = math.nan if softmax_scale is None else float(softmax_scale)
    params.causal = 1 if causal else 0
    params.window_size_left = left
    params.window_size_right = right
    params.softcap = float(softcap)

    out_obj, outr = call.output("out", out, qr.shape[:-1] + vr.shape[-1:], qr.dtype)
    lse_obj, lser = (call.output("lse", None, lse_shape, float32) if return_lse
                     else (None, None))
    args = [call.addr(r) for r in (qr, kr, vr, cq, ck, outr, lser)]
    if _select:
        return capi.fk_attention_select_kernel(call.ctx.handle, params, *args)
    capi.fk_attention_forward(call.ctx.handle, call.launch, params, *args)
    call.finish()
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
    if isinstance(activation, int) and not isinstance(activation, bool):
        return activation  # a capi.FK_ACTIVATION_* value; the library checks its range
    key = activation.lower() if isinstance(activation, str) else activation
    if key not in _ACTIVATIONS:
        raise _errors.InvalidArgumentError(
            f"activation: {activation!r} is not None, 'relu', 'gelu' (erf), 'gelu_erf' or "
            "'gelu_tanh'", 100)
    return _ACTIVATIONS[key]


def gemm(ctx, a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, bias=None,
         activation=None, out=None, _select=False):
    call = _Call(ctx, [("a", a), ("b", b), ("c", c), ("bias", bias)])
    ar, br, cr, biasr = call.refs
    _expect_rank(ar, (2, 3), "(M, K) or (batch, M, K)" if not trans_a else
                 "(K, M) or (batch, K, M)")
    _expect_rank(br, (2, 3), "(K, N) or (batch, K, N)" if not trans_b else
                 "(N, K) or (batch, N, K)")
    _expect_rank(cr, (2, 3), "(M, N) or (batch, M, N)")
    m = ar.shape[-1] if trans_a else ar.shape[-2]
    n = br.shape[-2] if trans_b else br.shape[-1]
    batches = [r.shape[0] for r in (ar, br, cr) if r is not None and r.ndim == 3]
    shape = ((batches[0],) if batches else ()) + (m, n)

    params = capi.fk_gemm_params_t()
    capi.fk_gemm_params_init(params)
    params.trans_a = 1 if trans_a else 0
    params.trans_b = 1 if trans_b else 0
    params.alpha = float(alpha)
    params.beta = float(beta)
    params.activation = _activation(activation)

    out_obj, outr = call.output("out", out, shape, cr.dtype if cr is not None else ar.dtype)
    args = [call.addr(r) for r in (ar, br, cr, biasr, outr)]
    if _select:
        return capi.fk_gemm_select_kernel(call.ctx.handle, params, *args)
    capi.fk_gemm(call.ctx.handle, call.launch, params, *args)
    call.finish()
    return out_obj


# ------------------------------------------------------------------------------------------
# Monarch and block-diagonal linear
# ------------------------------------------------------------------------------------------

def _monarch_params():
    params = capi.fk_monarch_params_t()
    capi.fk_monarch_params_init(params)
    return params


def monarch(ctx, x, w1, w2, out=None, *, bias=None, _select=False):
    call = _Call(ctx, [("x", x), ("w1", w1), ("w2", w2), ("bias", bias)])
    xr, w1r, w2r, biasr = call.refs
    _expect_rank(w1r, (3,), "(nblocks1, q, p)")
    _expect_rank(w2r, (3,), "(nblocks2, s, r)")
    if xr.ndim < 1:
        _expect_rank(xr, (2,), "(tokens, n)")
    n_out = w2r.shape[0] * w2r.shape[1]
    out_obj, outr = call.output("out", out, xr.shape[:-1] + (n_out,), xr.dtype)
    args = [call.addr(r) for r in (xr.flatten_leading(1), w1r, w2r, biasr,
                                   outr.flatten_leading(1))]
    if _select:
        return capi.fk_monarch_select_kernel(call.ctx.handle, _monarch_params(), *args)
    capi.fk_monarch(call.ctx.handle, call.launch, _monarch_params(), *args)
    call.finish()
    return out_obj


def blockdiag_linear(ctx, x, w, out=None, *, bias=None, _select=False):
    call = _Call(ctx, [("x", x), ("w", w), ("bias", bias)])
    xr, wr, biasr = call.refs
    _expect_rank(wr, (3,), "(nblocks, q, p)")
    if xr.ndim < 1:
        _expect_rank(xr, (2,), "(tokens, nblocks * p)")
    n_out = wr.shape[0] * wr.shape[1]
    out_obj, outr = call.output("out", out, xr.shape[:-1] + (n_out,), xr.dtype)
    args = [call.addr(r) for r in (xr.flatten_leading(1), wr, biasr, outr.flatten_leading(1))]
    if _select:
        return capi.fk_blockdiag_linear_select_kernel(call.ctx.handle, _monarch_params(), *args)
    capi.fk_blockdiag_linear(call.ctx.handle, call.launch, _monarch_params(), *args)
    call.finish()
    return out_obj


# ------------------------------------------------------------------------------------------
# FFT convolution
# ------------------------------------------------------------------------------------------

_MODES = {
    "causal": capi.FK_FFTCONV_CAUSAL,
    "circular": capi.FK_FFTCONV_CIRCULAR,
    "bidirectional": capi.FK_FFTCONV_BIDIRECTIONAL,
}


class FFTConv:
    """Long convolution of each channel with its own filter, by FFT (FlashFFTConv, Fu et al.
    2023; Hyena, Poli et al. 2023).

    Args:
        seqlen (int): sequence length ``L`` of ``u``.
        fft_size (int | None): FFT length, a power of two; None picks the smallest one the mode
            needs for the filter length met at call time.
        mode (str): ``"causal"`` (linear: ``y[t] = sum_{s<=t} k[s] v[t-s]``; needs
            ``fft_size >= L + min(filter_len, L) - 1``), ``"circular"`` (period ``fft_size``) or
            ``"bidirectional"`` (centred odd filter ``filter_len = 2R + 1``:
            ``y[t] = sum_{j=-R..R} k[R+j] v[t-j]``; M2-BERT's sequence mixer).
        dtype: dtype of ``u``, ``y`` and the gates (``"float32"``, ``"float16"``,
            ``"bfloat16"``, or a NumPy/ml_dtypes/torch dtype); None takes ``u``'s dtype.

    Calling it, ``conv(u, k, D=None, pregate=None, postgate=None, *, out=None)``:

    * ``u``: ``(batch, channels, seqlen)``, fp32/fp16/bf16, last dimension contiguous;
    * ``k``: ``(channels, filter_len)``, any float dtype, last dimension contiguous;
    * ``D``: optional ``(channels,)`` skip term; ``pregate``/``postgate``: optional, like ``u``;
    * returns ``y = postgate * (conv(pregate * u, k) + D * (pregate * u))`` (each factor only if
      given), ``(batch, channels, seqlen)`` in ``u``'s library and device, or ``out``.

    The C plan (twiddles, scratch) is made on first use for each (device, channels,
    filter_len, dtype) and reused. Raises InvalidArgumentError for a bad mode, a size that is
    not a power of two or too small for the mode, mismatched shapes or dtypes.
    """

    def __init__(self, seqlen, fft_size=None, mode="causal", dtype=None):
        if mode not in _MODES:
            raise _errors.InvalidArgumentError(
                f"mode: {mode!r} is not 'causal', 'circular' or 'bidirectional'", 100)
        if int(seqlen) < 0:
            raise _errors.InvalidArgumentError(f"seqlen: {seqlen} is negative", 100)
        self.seqlen = int(seqlen)
        self.fft_size = None if fft_size is None else int(fft_size)
        self.mode = mode
        self.dtype = _dlpack.as_dtype(dtype)
        self._plans = {}
        self._lock = threading.Lock()

    def _plan(self, ctx, channels, filter_len, dtype):
        key = (id(ctx), channels, filter_len, dtype)
        entry = self._plans.get(key)
        if entry is None:
            opts = capi.fk_fftconv_plan_options_t()
            capi.fk_fftconv_plan_options_init(opts)
            opts.mode = _MODES[self.mode]
            opts.channels = channels
            opts.seqlen = self.seqlen
            opts.filter_len = filter_len
            opts.fft_size = self.fft_size or 0
            dl = capi.DLDataType()
            dl.code, dl.bits, dl.lanes = dtype.code, dtype.bits, 1
            opts.dtype = dl
            with self._lock:
                entry = self._plans.get(key)
                if entry is None:
                    entry = (ctx, capi.fk_fftconv_plan_create(ctx.handle, opts))
                    self._plans[key] = entry
        return entry[1]

    def _run(self, ctx, u, k, D, pregate, postgate, out, select):
        call = _Call(ctx, [("u", u), ("k", k), ("D", D), ("pregate", pregate),
                           ("postgate", postgate)])
        ur, kr, dr, prer, postr = call.refs
        _expect_rank(ur, (3,), "(batch, channels, seqlen)")
        _expect_rank(kr, (2,), "(channels, filter_len)")
        plan = self._plan(call.ctx, ur.shape[1], kr.shape[1], self.dtype or ur.dtype)
        out_obj, outr = call.output("out", out, ur.shape, self.dtype or ur.dtype)
        args = [call.addr(r) for r in (ur, kr, dr, prer, postr, outr)]
        if select:
            return capi.fk_fftconv_select_kernel(plan, *args)
        capi.fk_fftconv_forward(plan, call.launch, *args)
        call.finish()
        return out_obj

    def __call__(self, u, k, D=None, pregate=None, postgate=None, *, out=None):
        return self._run(None, u, k, D, pregate, postgate, out, False)

    def run(self, context, u, k, D=None, pregate=None, postgate=None, *, out=None):
        """Like calling the object, on an explicit flashkit.Context."""
        return self._run(context, u, k, D, pregate, postgate, out, False)

    def select_kernel(self, u, k, D=None, pregate=None, postgate=None, *, out=None,
                      context=None):
        """Name of the kernel variant a call with these arguments would run."""
        return self._run(context, u, k, D, pregate, postgate, out, True)

    def resolved_fft_size(self, channels, filter_len=None, context=None):
        """The fft_size the plan for (channels, filter_len) uses after defaulting."""
        from ._context import default_context
        ctx = context or default_context("cpu")
        plan = self._plan(ctx, int(channels), int(filter_len or self.seqlen),
                          self.dtype or float32)
        opts = capi.fk_fftconv_plan_options_t()
        capi.fk_fftconv_plan_options_init(opts)
        capi.fk_fftconv_plan_get_options(plan, opts)
        return opts.fft_size

    def close(self):
        """Destroys the cached C plans (done automatically when the object is collected)."""
        with self._lock:
            plans, self._plans = self._plans, {}
        for _ctx, plan in plans.values():
            capi.fk_fftconv_plan_destroy(plan)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"flashkit.FFTConv(seqlen={self.seqlen}, fft_size={self.fft_size}, "
                f"mode={self.mode!r}, dtype={self.dtype.name if self.dtype else None})")


def _select_fftconv(ctx, u, k, D=None, pregate=None, postgate=None, *, fft_size=None,
                    mode="causal", dtype=None, out=None):
    shape = tuple(getattr(u, "shape", ()))
    if len(shape) != 3:
        _expect_rank(_dlpack.as_tensor(u, "u"), (3,), "(batch, channels, seqlen)")
    conv = FFTConv(shape[2], fft_size=fft_size, mode=mode, dtype=dtype)
    try:
        return conv._run(ctx, u, k, D, pregate, postgate, out, True)
    finally:
        conv.close()


def _selector(fn):
    def select(ctx, *args, **kwargs):
        return fn(ctx, *args, _select=True, **kwargs)
    return select


SELECTORS = {
    "attention": _selector(attention),
    "gemm": _selector(gemm),
    "monarch": _selector(monarch),
    "blockdiag_linear": _selector(blockdiag_linear),
    "fftconv": _select_fftconv,
}
