"""flashkit.Context: one backend and device, and the default context of each device."""

import contextlib
import itertools
import threading

import numpy as np

from . import _dlpack, _errors, _ops, capi

_BACKENDS = {capi.FK_BACKEND_CPU: "cpu", capi.FK_BACKEND_CUDA: "cuda"}
_FAMILIES = {
    None: capi.FK_KERNEL_FAMILY_AUTO,
    "auto": capi.FK_KERNEL_FAMILY_AUTO,
    "generic": capi.FK_KERNEL_FAMILY_GENERIC,
    "sm80": capi.FK_KERNEL_FAMILY_SM80,
    "sm90": capi.FK_KERNEL_FAMILY_SM90,
}


def _parse_device(device):
    """("auto"|"cpu"|"cuda", ordinal) from "auto", "cpu", "cuda", "cuda:N", an int N (CUDA N) or
    a torch.device."""
    if isinstance(device, (int, np.integer)) and not isinstance(device, (bool, np.bool_)):
        return "cuda", _ops.int_arg(device, "device", what=f"ordinal {int(device)}")
    text = str(device).strip().lower()
    if text in ("auto", "cpu", "cuda"):
        return text, 0
    if text.startswith("cuda:"):
        try:
            ordinal = int(text[5:])
        except ValueError:
            ordinal = -1
        if ordinal >= 0:
            return "cuda", _ops.int_arg(ordinal, "device", what=f"ordinal {ordinal}")
    raise _errors.InvalidArgumentError(
        f"device: {device!r} is not 'auto', 'cpu', 'cuda' or 'cuda:N'", 100)


class Context(_ops._Unshareable):
    """A flashkit context: one backend (CPU or CUDA) and one device.

    Args:
        device: ``"auto"`` (CUDA device 0 when flashkit was built with CUDA and a GPU is
            present, else the CPU, also when that GPU is older than the build's kernels:
            compute capability below 7.5, logged as a warning; the environment variable
            ``FLASHKIT_BACKEND`` overrides ``"auto"`` only), ``"cpu"``, ``"cuda"`` (device 0), ``"cuda:N"``, an int ``N`` or a
            ``torch.device``.
        kernel_family: ``None``/``"auto"`` (best per call), or force ``"generic"``, ``"sm80"`` or
            ``"sm90"`` (CUDA only; the generic kernels stay as fallback).
        num_threads: CPU worker threads; 0 uses ``FLASHKIT_NUM_THREADS`` or every core.

    Raises:
        InvalidArgumentError: unknown device string or kernel family, ``num_threads`` not an
            int or outside 0..4096, a device ordinal beyond int32; an unparsable environment
            variable where it applies: ``FLASHKIT_BACKEND`` with ``device="auto"``,
            ``FLASHKIT_KERNEL_FAMILY`` with ``kernel_family`` None or ``"auto"`` (CPU contexts
            included), ``FLASHKIT_NUM_THREADS`` with ``num_threads=0``.
        NotSupportedError: CUDA asked for but not compiled in, no such device, a GPU below
            compute capability 7.5, a forced family the GPU cannot run, or any forced
            ``kernel_family`` (``"generic"``,
            ``"sm80"``, ``"sm90"``) on a CPU context.

    The simple functions (``flashkit.attention`` ...) use the default context of their inputs'
    device; a Context's methods of the same names run on that context instead. Contexts are
    immutable and may be shared between threads. ``close()`` (or ``with``) releases it early;
    otherwise it is released when garbage collected. Closing it first destroys the FFT plans
    that :class:`FFTConv` objects made on it (a plan must not outlive its context); using it
    afterwards, also through those FFTConv objects, raises InvalidArgumentError.
    """

    def __init__(self, device="auto", *, kernel_family=None, num_threads=0):
        self._handle = None
        self._plans = {}  # token -> fk_fftconv_plan_t*, all destroyed before the context
        # Re-entrant: a log callback runs on the thread of the call it reports, which may hold
        # this lock (plan creation logs its errors), and may use the context itself.
        self._plans_lock = threading.RLock()
        # Calls in flight (the C calls release the GIL): destroying the C context or a plan
        # waits for the last of them, so close() on one thread never frees a handle another
        # thread's call is using.
        self._calls = 0
        self._doomed = []  # plans, then the context handle, destroyed when _calls drops to 0
        kind, ordinal = _parse_device(device)
        if not _ops.in_choices(kernel_family, _FAMILIES):
            hint = (" (the CPU is a backend, not a kernel family: use device='cpu')"
                    if kernel_family == "cpu" else "")
            raise _errors.InvalidArgumentError(
                f"kernel_family: {kernel_family!r} is not None, 'auto', 'generic', 'sm80' or "
                f"'sm90'{hint}", 100)
        opts = capi.fk_context_options_t()
        capi.fk_context_options_init(opts)
        opts.backend = {"auto": capi.FK_BACKEND_AUTO, "cpu": capi.FK_BACKEND_CPU,
                        "cuda": capi.FK_BACKEND_CUDA}[kind]
        opts.device_ordinal = ordinal
        opts.kernel_family = _FAMILIES[kernel_family]
        opts.num_threads = _ops.int_arg(num_threads, "num_threads")
        try:
            self._handle = capi.fk_context_create(opts)
        except _errors.FlashkitError as e:
            err = _ops._pythonic_error(e)  # options.num_threads -> num_threads, ... -> device
            if err is e:
                raise
            raise err from None
        info = self.info()
        self.device = "cpu" if info["backend"] == "cpu" else f"cuda:{info['device_ordinal']}"

    @property
    def closed(self):
        """True after close()."""
        return self._handle is None

    @property
    def handle(self):
        """The raw ``fk_context_t*`` for flashkit.capi calls."""
        if self._handle is None:
            raise _errors.InvalidArgumentError("context: used after close()", 101)
        return self._handle

    def _enter_call(self, entered):
        """The handle, counted as in use until the matching _leave_call() (what in_call does,
        without a generator: the operations call these on every call). Raises
        InvalidArgumentError after close(). Sets ``entered[0]`` right after the count, with no
        call in between (the interpreter runs signal handlers at calls, so a KeyboardInterrupt
        cannot land between the two), so that a caller calling this inside its ``try`` leaves
        exactly when it entered."""
        with self._plans_lock:
            handle = self.handle
            self._calls += 1
            entered[0] = True
        return handle

    def _leave_call(self, entered):
        """Ends the call _enter_call(entered) counted, if it still counts (the callers retry it
        until ``entered[0]`` is False: see _ops._Call.run)."""
        with self._plans_lock:
            if entered[0]:
                self._calls -= 1
                entered[0] = False  # no call in between, as in _enter_call
                if self._doomed:
                    self._destroy_doomed()

    def _destroy_doomed(self):
        # with _plans_lock held. One entry at a time, each taken off the list before it is
        # destroyed: a Ctrl-C between two destroys leaves the rest listed (the next leave or
        # close destroys them) instead of dropping them.
        while self._calls == 0 and self._doomed:
            kind, h = self._doomed.pop(0)
            (capi.fk_fftconv_plan_destroy if kind == "plan" else capi.fk_context_destroy)(h)

    def info(self):
        """What this context runs on.

        Returns:
            dict with ``backend`` ("cpu" or "cuda"), ``kernel_family`` ("cpu", "generic",
            "sm80" or "sm90": the family forced at creation, else the best one it
            dispatches to), ``device`` ("cpu" or
            "cuda:N"), ``device_ordinal`` (-1 on the CPU), ``device_name``,
            ``compute_capability`` ((major, minor); (0, 0) on the CPU), ``sm_count``,
            ``num_threads``, ``l2_bytes`` (bytes), ``smem_per_block_optin`` (bytes of shared
            memory one block may opt in to; 0 on the CPU), ``version`` (library).
        """
        raw = capi.fk_context_info_t()
        capi.fk_context_info_init(raw)
        capi.fk_context_get_info(self.handle, raw)
        backend = _BACKENDS.get(raw.backend, capi.fk_backend_name(raw.backend))
        return {
            "backend": backend,
            "kernel_family": capi.fk_kernel_family_name(raw.kernel_family),
            "device": "cpu" if backend == "cpu" else f"cuda:{raw.device_ordinal}",
            "device_ordinal": raw.device_ordinal,
            "device_name": raw.device_name,
            "compute_capability": (raw.cc_major, raw.cc_minor),
            "sm_count": raw.sm_count,
            "num_threads": raw.num_threads,
            "l2_bytes": raw.l2_bytes,
            "smem_per_block_optin": raw.smem_per_block_optin,
            "version": capi.fk_get_version(),
        }

    def select_kernel(self, op, *args, **kwargs):
        """Name of the kernel variant ``op`` would run on this context for these arguments,
        e.g. ``"cpu.attention"`` or ``"cuda.sm90.attention"``. Validates exactly like the call
        (same exceptions) and runs nothing.

        Args:
            op: ``"attention"``, ``"attention_fp8"`` (e.g. ``"cuda.sm90.attention_fp8"``,
                ``"cuda.sm80.attention+fp8_dequant"``), ``"attention_kvcache"``, ``"gemm"``,
                ``"gemm_scaled"``, ``"monarch"``, ``"blockdiag_linear"`` or ``"fftconv"``.
            *args, **kwargs: the arguments of ``flashkit.<op>`` (for ``"fftconv"``:
                ``(u, k, D=None, pregate=None, postgate=None, *, fft_size=None,
                mode="causal", dtype=None, out=None)``).
        """
        impl = _ops.SELECTORS.get(op) if _ops.in_choices(op, _ops.SELECTORS) else None
        if impl is None:
            raise _errors.InvalidArgumentError(
                f"op: {op!r} is not one of {', '.join(sorted(_ops.SELECTORS))}", 100)
        return impl(self, *args, **kwargs)

    def workspace_size(self, op, *args, **kwargs):
        """Bytes of ``workspace=`` with which ``op`` on this context and these arguments
        allocates nothing (the fk_*_workspace_size queries): 0 when the call takes no scratch
        (every CPU call, blockdiag_linear, most attention calls); nonzero for split-K GEMMs
        (decode-sized M, long K), every attention_fp8 call on a GPU (its bf16 copies of q, k and
        v, 2 bytes per element each, or on Hopper's fp8 kernel none, or a copy of v: transposed at head_dim 256 with many query rows per key, plain for a v off the 16-byte rule), attention calls whose keys the GPU splits into chunks
        (fp16/bf16 decode-like calls with too few query tiles to fill it; so a small batch can
        need scratch where a large one needs none: query each shape), FFT convolutions that recompute their filter's spectrum per call (and the
        generic kernel's four-step intermediates above fft_size 8192), Monarch calls that run in
        passes (cuda.sm80.monarch_unfused: up to 128 MiB for a chunk of tokens; the generic
        kernel: its fp32 intermediate). A workspace of this size, at any address, covers the call; a smaller one is
        still valid (the rest is allocated); one workspace shared by several calls needs the
        largest of their sizes. Validates exactly like the call (same exceptions) and runs no
        kernel; without ``out=`` it allocates a temporary output for that validation, as
        :meth:`select_kernel` does.

        Args:
            op, *args, **kwargs: as for :meth:`select_kernel`. ``"fftconv"`` sizes a plan
                without a constant filter; for an ``FFTConv(filter_constant=True)`` object use
                its own ``workspace_size``.
        """
        impl = (_ops.WORKSPACE_SIZES.get(op) if _ops.in_choices(op, _ops.WORKSPACE_SIZES)
                else None)
        if impl is None:
            raise _errors.InvalidArgumentError(
                f"op: {op!r} is not one of {', '.join(sorted(_ops.WORKSPACE_SIZES))}", 100)
        return impl(self, *args, **kwargs)

    def attention(self, q, k, v, **kwargs):
        """flashkit.attention on this context (same arguments)."""
        return _ops.attention(self, q, k, v, **kwargs)

    def attention_fp8(self, q, k, v, **kwargs):
        """flashkit.attention_fp8 on this context (same arguments)."""
        return _ops.attention_fp8(self, q, k, v, **kwargs)

    def attention_kvcache(self, q, k_cache, v_cache, cache_seqlens=None, block_table=None,
                          **kwargs):
        """flashkit.attention_kvcache on this context (same arguments)."""
        return _ops.attention_kvcache(self, q, k_cache, v_cache, cache_seqlens, block_table,
                                      **kwargs)

    def gemm(self, a, b, c=None, **kwargs):
        """flashkit.gemm on this context (same arguments)."""
        return _ops.gemm(self, a, b, c, **kwargs)

    def gemm_scaled(self, a, b, c=None, **kwargs):
        """flashkit.gemm_scaled on this context (same arguments)."""
        return _ops.gemm_scaled(self, a, b, c, **kwargs)

    def monarch(self, x, w1, w2, **kwargs):
        """flashkit.monarch on this context (same arguments)."""
        return _ops.monarch(self, x, w1, w2, **kwargs)

    def blockdiag_linear(self, x, w, **kwargs):
        """flashkit.blockdiag_linear on this context (same arguments)."""
        return _ops.blockdiag_linear(self, x, w, **kwargs)

    def close(self):
        """Releases the context, after destroying the FFT plans made on it (the FFTConv objects
        that cached them raise InvalidArgumentError when used on this context again). Calling
        it twice does nothing. Calls running on other threads finish normally: the C context and
        plans are destroyed when the last of them returns; calls made after close() raise."""
        lock = getattr(self, "_plans_lock", None)
        if lock is None:  # __init__ failed before setting anything up
            return
        with lock:
            handle, self._handle = self._handle, None
            plans, self._plans = self._plans, {}
            self._doomed.extend(("plan", plan) for plan in plans.values())
            if handle is not None:
                self._doomed.append(("context", handle))
            self._destroy_doomed()  # now, or when the last running call returns

    # FFT plans are owned here, not by FFTConv, so that closing (or collecting) the context
    # can destroy them first, whatever order the garbage collector finalises objects in.
    def _create_fftconv_plan(self, opts, handle=None):
        """(token, plan): a new fk_fftconv_plan_t* on this context, destroyed by close() at the
        latest. The caller has entered a call on this context (_enter_call), which keeps the C
        context alive; ``handle`` is the one that call entered with. The plan is made without
        _plans_lock held: a refused plan logs its error under the library's log lock, and a
        log callback on another thread may be waiting for _plans_lock meanwhile (a deadlock);
        it is registered afterwards. If close() came first, the plan is destroyed with the
        context once the last call leaves: with ``handle`` the result is (None, plan), for the
        calling call alone; without, InvalidArgumentError."""
        try:
            plan = capi.fk_fftconv_plan_create(self.handle if handle is None else handle, opts)
        except _errors.FlashkitError as e:
            err = _ops._pythonic_error(e)  # options.channels -> channels
            if err is e:
                raise
            raise err from None
        with self._plans_lock:
            if self._handle is None:  # closed meanwhile: destroyed when the last call leaves
                self._doomed.insert(0, ("plan", plan))
                self._destroy_doomed()
                if handle is not None:
                    return None, plan
                self.handle  # raises InvalidArgumentError("context: used after close()")
            token = next(_plan_tokens)
            self._plans[token] = plan
        return token, plan

    def _destroy_fftconv_plan(self, token):
        """Destroys the plan of ``token`` unless close() has already."""
        with self._plans_lock:
            plan = self._plans.pop(token, None)
            if plan is not None:
                self._doomed.append(("plan", plan))
                self._destroy_doomed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the module may be gone already
            pass

    def __repr__(self):
        if self._handle is None:
            return "flashkit.Context(<closed>)"
        info = self.info()
        return (f"flashkit.Context(device={info['device']!r}, "
                f"kernel_family={info['kernel_family']!r}, name={info['device_name']!r})")


# How many times a call on the default context moves to the new default after another thread
# closed the one it resolved. Each retry follows one more close(), so the bound is only reached
# by a thread that keeps closing it; 8 ran out under load (a 3-thread stress test against 150
# closes failed about once in a few CI runs: a call on the fresh default lost the race to the
# next close() eight times in a row while the machine was busy).
_CLOSE_RETRIES = 1000


def enter_call(owner, entered, replace=None):
    """Enters ``owner.ctx`` (Context._enter_call) and returns its handle. ``replace``: when
    ``owner.ctx`` is a default context the caller resolved, the function that resolves it
    again; a default context another thread closed meanwhile is then replaced by the new
    default ("closing it is allowed: the next use makes a new one"), up to _CLOSE_RETRIES
    times. ``owner.ctx`` is set before each attempt, so the caller leaves the context it
    entered (``owner.ctx._leave_call(entered)``) whatever lands in between."""
    for attempt in range(_CLOSE_RETRIES):  # each retry follows one more close() elsewhere
        try:
            return owner.ctx._enter_call(entered)
        except _errors.InvalidArgumentError:
            if replace is None or not owner.ctx.closed or attempt == _CLOSE_RETRIES - 1:
                raise
            owner.ctx = replace()


@contextlib.contextmanager
def in_call(owner, replace=None):
    """enter_call() for one C call in a ``with`` block; yields the handle and leaves
    ``owner.ctx`` at the end, also after an asynchronous exception (as _ops._Call.run)."""
    entered = [False]
    try:
        yield enter_call(owner, entered, replace)
    finally:
        pending = None
        while entered[0]:
            try:
                owner.ctx._leave_call(entered)
            except BaseException as e:  # noqa: B036 (re-raised below)
                pending = e
        if pending is not None:
            raise pending


_plan_tokens = itertools.count()
_defaults = {}
_defaults_lock = threading.Lock()


def default_context(device="auto"):
    """The shared default Context of ``device`` ("cpu", "cuda:N", "auto"), created on first use.
    The simple functions use the default context of their inputs' device. Closing it is
    allowed: the next use makes a new one.

    Raises:
        InvalidArgumentError: ``device`` not one of those spellings, an int or a torch.device
            (status 100), or an ordinal beyond int32.
        NotSupportedError, DeviceError: as :class:`Context` (status 201: no CUDA backend or
            device for "cuda"; a CUDA error).
    """
    kind, ordinal = _parse_device(device)
    key = (kind, ordinal)
    ctx = _defaults.get(key)
    if ctx is None or ctx.closed:  # a closed default context is replaced, not kept
        # Made outside the lock: context creation logs, and a log callback on this thread may
        # ask for the default context itself. Two threads racing here keep the first one.
        made = Context(device if kind == "auto" else
                       ("cpu" if kind == "cpu" else f"cuda:{ordinal}"))
        with _defaults_lock:
            ctx = _defaults.get(key)
            if ctx is None or ctx.closed:
                ctx, made = made, None
                _defaults[key] = ctx
        if made is not None:
            made.close()
    return ctx


def context_for(device_type, device_id):
    """Default context for a DLPack device."""
    if device_type in _dlpack._CUDA_DEVICES:
        return default_context(f"cuda:{device_id}")
    return default_context("cpu")
