"""Context.close() and FFTConv.close() on one thread while a call runs on another (the wrapped
C calls release the GIL): the C context and plans must not be destroyed under a running call.
The C entry points are wrapped to record the order of events deterministically."""

import threading
import time

import numpy as np

import flashkit
from flashkit import capi


def _slow(monkeypatch, name, log, started):
    real = getattr(capi, name)

    def wrapped(*args):
        log.append("enter")
        started.set()
        time.sleep(0.3)  # a long call: the GIL is free meanwhile
        try:
            return real(*args)
        finally:
            log.append("exit")

    monkeypatch.setattr(capi, name, wrapped)


def _recording(monkeypatch, name, log):
    real = getattr(capi, name)

    def wrapped(*args):
        log.append("destroy")
        return real(*args)

    monkeypatch.setattr(capi, name, wrapped)


def test_context_close_waits_for_running_call(monkeypatch, no_gc):
    log, started = [], threading.Event()
    _slow(monkeypatch, "fk_gemm", log, started)
    _recording(monkeypatch, "fk_context_destroy", log)
    ctx = flashkit.Context("cpu", num_threads=1)
    a = np.eye(4, dtype=np.float32)
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("out", ctx.gemm(a, a)))
    t.start()
    assert started.wait(10)
    ctx.close()  # must not destroy the C context under the running gemm
    assert ctx.closed
    t.join(10)
    assert log == ["enter", "exit", "destroy"], log
    np.testing.assert_array_equal(res["out"], a)
    try:
        ctx.gemm(a, a)
        raise AssertionError("call after close() did not raise")
    except flashkit.InvalidArgumentError as e:
        assert "close" in str(e)


def test_fftconv_close_waits_for_running_forward(monkeypatch, no_gc):
    log, started = [], threading.Event()
    _slow(monkeypatch, "fk_fftconv_forward", log, started)
    _recording(monkeypatch, "fk_fftconv_plan_destroy", log)
    _recording(monkeypatch, "fk_context_destroy", log)
    ctx = flashkit.Context("cpu", num_threads=1)
    u = np.ones((1, 2, 8), dtype=np.float32)
    k = np.ones((2, 8), dtype=np.float32)
    for closer in ("conv", "ctx"):
        del log[:]
        started.clear()
        conv = flashkit.FFTConv(8)
        res = {}
        t = threading.Thread(target=lambda: res.setdefault("out", conv.run(ctx, u, k)))
        t.start()
        assert started.wait(10)
        (conv.close if closer == "conv" else ctx.close)()
        t.join(10)
        assert log == ["enter", "exit", "destroy"] + (["destroy"] if closer == "ctx" else []), \
            (closer, log)
        assert res["out"].shape == u.shape
