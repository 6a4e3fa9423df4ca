"""Python-layer robustness found by a break-it review (session 45): copies, re-entrant log
callbacks, a filter whose __del__ calls its FFTConv, Ctrl-C around a call, contexts an FFTConv
ran on, the default context closed by another thread, failing calls that cached plans, and
argument checks. Calls that used to hang run in a child process with a time limit."""

import copy
import gc
import pickle
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import flashkit
import fk_reference as ref


def _child(code, timeout=60):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_contexts_and_plans_refuse_copies():
    # A shallow copy shared the C handle and destroyed it when collected (a double free).
    ctx = flashkit.Context("cpu")
    conv = flashkit.FFTConv(16)
    for obj in (ctx, conv):
        for fn in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be"):
                fn(obj)
    a = np.ones((4, 4), np.float32)
    ref.assert_close(ctx.gemm(a, a), a @ a, "float32")
    ctx.close()


def test_log_callback_using_flashkit_during_context_and_plan_creation_does_not_hang():
    # The callback runs on the thread that logs, which held the default-context lock (context
    # creation logs at INFO) or the context's plan lock (a refused plan logs at ERROR).
    out = _child("""
        import numpy as np, flashkit
        a = np.ones((4, 4), np.float32)
        seen = []
        def cb(level, msg):
            seen.append(flashkit.default_context("cpu").info()["backend"])
            seen.append(ctx.gemm(a, a)[0, 0] if ctx is not None else None)
        ctx = None
        flashkit.set_log_callback(cb, flashkit.LogLevel.INFO)
        flashkit.gemm(a, a)  # the default context is created here, logging under the callback
        ctx = flashkit.Context("cpu")
        try:  # the plan is refused and logged while the context's plan lock is held
            flashkit.FFTConv(16).resolved_fft_size(2**62, context=ctx)
        except flashkit.FlashkitError:
            pass
        flashkit.set_log_callback(None)
        print("done", "cpu" in seen and 4.0 in seen)
    """)
    assert "done True" in out


def test_filter_del_calling_its_fftconv_does_not_hang():
    # With filter_constant the object keeps the last filter; replacing it dropped the previous
    # one under the object's lock, and that filter's __del__ called the object again.
    out = _child("""
        import numpy as np, flashkit
        conv = flashkit.FFTConv(32, filter_constant=True)
        u = np.ones((1, 2, 32), np.float32)
        class K(np.ndarray):
            def __del__(self):
                conv(u, np.ones((2, 32), np.float32))
        conv(u, np.ones((2, 32), np.float32).view(K))
        conv(u, np.ones((2, 32), np.float32))
        conv.close()
        print("done")
    """)
    assert "done" in out


def test_an_interrupt_at_the_end_of_a_call_leaves_the_context_destroyable(monkeypatch):
    # A KeyboardInterrupt landing before the call's count dropped left the context counted as
    # in use, so close() never destroyed it. Simulated: the first leave raises first.
    ctx = flashkit.Context("cpu", num_threads=1)
    a = np.ones((8, 8), np.float32)
    real = ctx._leave_call
    raised = []

    def leave(entered):
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt
        real(entered)

    monkeypatch.setattr(ctx, "_leave_call", leave)
    with pytest.raises(KeyboardInterrupt):
        ctx.gemm(a, a)
    assert ctx._calls == 0
    monkeypatch.setattr(ctx, "_leave_call", real)
    ref.assert_close(ctx.gemm(a, a), a @ a, "float32")
    ctx.close()
    assert ctx._doomed == []


def test_fftconv_does_not_keep_its_contexts_alive(rng):
    conv = flashkit.FFTConv(32)
    u, k = ref.randn(rng, (1, 2, 32)), ref.randn(rng, (2, 32))
    refs = []
    for _ in range(20):
        ctx = flashkit.Context("cpu", num_threads=1)
        ref.assert_close(conv.run(ctx, u, k), ref.fftconv(u, k), "float32")
        refs.append(weakref.ref(ctx))
        del ctx
    gc.collect()
    assert sum(r() is not None for r in refs) == 0
    ref.assert_close(conv(u, k), ref.fftconv(u, k), "float32")
    assert len(conv._plans) <= 2  # stale entries dropped when a plan is made


def test_default_context_closed_by_another_thread(rng):
    # "Closing it is allowed: the next use makes a new one": calls racing with close() move
    # to the new default context instead of failing.
    a = ref.randn(rng, (16, 16))
    u, k = ref.randn(rng, (1, 2, 64)), ref.randn(rng, (2, 64))
    conv = flashkit.FFTConv(64)
    want_g, want_c = a.astype(np.float64) @ a, ref.fftconv(u, k)
    errors, stop = [], threading.Event()

    def worker():
        while not stop.is_set():
            try:
                ref.assert_close(flashkit.gemm(a, a), want_g, "float32")
                ref.assert_close(conv(u, k), want_c, "float32")
            except Exception as e:  # noqa: BLE001 (collected for the assertion)
                errors.append(repr(e))
    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(150):
        flashkit.default_context("cpu").close()
    stop.set()
    for t in threads:
        t.join()
    assert errors == []


def test_fftconv_call_finishes_when_its_context_is_closed_after_it_entered(rng):
    # Context.close(): "Calls running on other threads finish normally". Another thread's
    # close() landing after an FFTConv call entered its context but before the call made its
    # plan used to fail the call ("context: used after close()"). Here close() runs at that
    # point, deterministically: the call must finish on the entered context (a plan made for
    # it alone, or the cached one), and the next call must raise.
    u, k = ref.randn(rng, (2, 3, 50)), ref.randn(rng, (3, 50))
    want = ref.fftconv(u, k)
    for cached, constant in ((False, False), (True, False), (False, True), (True, True)):
        conv = flashkit.FFTConv(50, filter_constant=constant)
        ctx = flashkit.Context("cpu")
        if cached:
            ref.assert_close(conv.run(ctx, u, k), want, "float32")
        real_plan = conv._plan

        def plan_after_close(c, *args, real_plan=real_plan, ctx=ctx):
            if c is ctx:
                ctx.close()  # what another thread's close() would do at this point
            return real_plan(c, *args)

        conv._plan = plan_after_close
        ref.assert_close(conv.run(ctx, u, k), want, "float32")
        assert ctx.closed
        # The plans and the C context were destroyed when the call left, and no filter stays
        # recorded for a plan that is gone (a filter_constant call used to leave it behind).
        assert ctx._calls == 0 and ctx._doomed == []
        assert conv._filters == {} or all(key in conv._plans for key in conv._filters)
        with pytest.raises(flashkit.InvalidArgumentError, match="used after close"):
            conv.run(ctx, u, k)
        conv.close()


def test_resolved_fft_size_follows_a_closed_default_context(monkeypatch):
    # The default context closed by another thread between resolved_fft_size's lookup and its
    # call (placed there deterministically): like the operations, it moves to the new default.
    conv = flashkit.FFTConv(100)
    want = conv.resolved_fft_size(3)
    real_enter = flashkit.Context._enter_call
    closed = []

    def enter_after_close(self, entered):
        if not closed:
            closed.append(self)
            self.close()
        return real_enter(self, entered)

    monkeypatch.setattr(flashkit.Context, "_enter_call", enter_after_close)
    assert conv.resolved_fft_size(3) == want
    assert closed and closed[0].closed and not flashkit.default_context("cpu").closed
    ctx = flashkit.Context("cpu")
    ctx.close()
    with pytest.raises(flashkit.InvalidArgumentError, match="used after close"):
        conv.resolved_fft_size(3, context=ctx)  # an explicit context's close stands
    conv.close()


def test_a_failing_fftconv_call_caches_no_plan(rng):
    conv = flashkit.FFTConv(64)
    with pytest.raises(flashkit.InvalidArgumentError, match="u: seqlen is 60 but the plan gives 64"):
        conv(ref.randn(rng, (1, 2, 60)), ref.randn(rng, (2, 60)))
    assert conv._plans == {}


def test_argument_checks():
    conv = flashkit.FFTConv(64)
    with pytest.raises(flashkit.InvalidArgumentError, match="context: str is not a flashkit.Context"):
        conv.resolved_fft_size(2, context="cpu")
    a = np.ones((4, 4), np.float32)
    for bad in (2 + 5j, np.complex64(1)):
        with pytest.raises(flashkit.InvalidArgumentError, match="alpha: .*complex"):
            flashkit.gemm(a, a, alpha=bad)
    with pytest.raises(flashkit.InvalidArgumentError, match="softmax_scale: .*complex"):
        q = np.ones((1, 2, 1, 4), np.float32)
        flashkit.attention(q, q, q, softmax_scale=1j)


def test_more_argument_checks(rng):
    q = ref.randn(rng, (1, 4, 1, 8))
    # window_size must be an ordered pair, not a set or dict (whose order is not the caller's)
    for bad in ({3, -1}, {"left": 3, "right": -1}):
        with pytest.raises(flashkit.InvalidArgumentError, match="window_size: .*not a pair"):
            flashkit.attention(q, q, q, window_size=bad)
    ref.assert_close(flashkit.attention(q, q, q, window_size=[1, 0]),
                     flashkit.attention(q, q, q, window_size=(1, 0)), "float32")
    # dtypes in a non-native byte order are refused like the string '>f4'
    for bad in (np.dtype(">f4"), ">f4"):
        with pytest.raises(flashkit.InvalidArgumentError, match="dtype"):
            flashkit.FFTConv(16, dtype=bad)
    # Context.workspace_size("fftconv", ...) takes workspace= as the other ops do
    u, k = ref.randn(rng, (1, 2, 16)), ref.randn(rng, (2, 16))
    ctx = flashkit.default_context("cpu")
    assert ctx.workspace_size("fftconv", u, k, workspace=np.empty(64, np.uint8)) == 0
    # an out= overlapping lse names both as outputs
    out = np.empty((1, 4, 1, 8), np.float32)
    lse = out.reshape(-1)[:4].reshape(1, 1, 4)
    with pytest.raises(flashkit.InvalidArgumentError, match="or with each other"):
        flashkit.attention(q, q, q, out=out, lse=lse)


def test_filter_constant_calls_racing_from_two_threads_keep_the_cached_filter(rng):
    # A long call recording its filter after a short one on another thread left the object
    # holding the wrong filter; the freed one's address then came back with other values and
    # the plan reused its spectrum (13 of 20 trials in a review's run). Calls of a
    # filter-constant object now run one at a time with their record.
    L, C = 2048, 8
    conv, plain = flashkit.FFTConv(L, filter_constant=True), flashkit.FFTConv(L)
    for _ in range(8):
        k1, k2 = ref.randn(rng, (C, L)), ref.randn(rng, (C, L))
        big, small = ref.randn(rng, (32, C, L)), ref.randn(rng, (1, C, L))
        t = threading.Thread(target=lambda: conv(big, k1))
        t.start()
        conv(small, k2)
        t.join()
        del k2
        k3 = ref.randn(rng, (C, L))
        np.testing.assert_array_equal(conv(small, k3), plain(small, k3))
        del k1, k3


def test_plan_refused_while_another_threads_log_callback_uses_the_context():
    # The refused plan logged its error (the library's log lock) while the binding held the
    # context's plan lock, which another thread's log callback was waiting for: a deadlock.
    out = _child("""
        import threading, time, numpy as np, flashkit
        ctx = flashkit.Context("cpu")
        q = np.ones((1, 4, 1, 8), np.float32)
        def cb(level, msg):
            if "head_dim" in msg:
                time.sleep(0.5)
                ctx.attention(q, q, q)
        flashkit.set_log_callback(cb, flashkit.LogLevel.ERROR)
        def a():
            try:
                ctx.attention(*(np.ones((1, 4, 1, 300), np.float32),) * 3)  # refused, logged
            except flashkit.FlashkitError:
                pass
        def b():
            time.sleep(0.1)
            try:  # fft_size too small: the plan is refused and logged
                flashkit.FFTConv(16, fft_size=8).run(ctx, np.ones((1, 2, 16), np.float32),
                                                     np.ones((2, 16), np.float32))
            except flashkit.FlashkitError:
                pass
        ts = [threading.Thread(target=f, daemon=True) for f in (a, b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(20)
        print("alive", [t.is_alive() for t in ts])
        import os
        os._exit(0)
    """)
    assert "alive [False, False]" in out
