"""flashkit.Context, default contexts, kernel selection, version, docs and logging."""

import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flashkit
import fk_reference as ref
from flashkit import capi

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_matches_VERSION_file():
    assert flashkit.__version__ == (ROOT / "VERSION").read_text().strip()
    assert flashkit.library_version() == flashkit.__version__
    assert capi.fk_get_version_number() == capi.FK_VERSION_NUMBER


def test_cpu_context_info():
    with flashkit.Context("cpu", num_threads=2) as ctx:
        info = ctx.info()
        assert info["backend"] == "cpu" and info["kernel_family"] == "cpu"
        assert info["device"] == "cpu" and info["device_ordinal"] == -1
        assert info["compute_capability"] == (0, 0) and info["num_threads"] == 2
        assert ctx.device == "cpu" and "cpu" in repr(ctx)
    assert "closed" in repr(ctx)
    with pytest.raises(flashkit.InvalidArgumentError, match="context"):
        ctx.info()


def test_auto_context_and_defaults():
    info = flashkit.Context().info()
    assert info["backend"] in ("cpu", "cuda")
    assert flashkit.default_context("cpu") is flashkit.default_context("cpu")
    assert flashkit.default_context("cpu").info()["backend"] == "cpu"


def test_select_kernel_every_op(rng):
    ctx = flashkit.Context("cpu")
    q = ref.randn(rng, (1, 8, 2, 16))
    a = ref.randn(rng, (8, 8))
    x = ref.randn(rng, (4, 16))
    w = ref.randn(rng, (4, 4, 4))
    u = ref.randn(rng, (1, 2, 32))
    k = ref.randn(rng, (2, 32))
    names = {
        "attention": ctx.select_kernel("attention", q, q, q, causal=True),
        "gemm": ctx.select_kernel("gemm", a, a, activation="relu"),
        "monarch": ctx.select_kernel("monarch", x, w, w),
        "blockdiag_linear": ctx.select_kernel("blockdiag_linear", x, w),
        "fftconv": ctx.select_kernel("fftconv", u, k),
    }
    for op, name in names.items():
        assert isinstance(name, str) and name.startswith("cpu"), (op, name)
    assert flashkit.FFTConv(32).select_kernel(u, k) == names["fftconv"]
    with pytest.raises(flashkit.InvalidArgumentError, match="q"):
        ctx.select_kernel("attention", a, a, a)


def test_context_methods_run_on_that_context(rng):
    ctx = flashkit.Context("cpu", num_threads=1)
    a = ref.randn(rng, (5, 6))
    ref.assert_close(ctx.gemm(a, a.T), ref.gemm(a, a.T), "float32")
    q = ref.randn(rng, (1, 5, 1, 8))
    ref.assert_close(ctx.attention(q, q, q), ref.attention(q, q, q)[0], "float32")
    conv = flashkit.FFTConv(16)
    u, k = ref.randn(rng, (1, 1, 16)), ref.randn(rng, (1, 16))
    ref.assert_close(conv.run(ctx, u, k), ref.fftconv(u, k), "float32")
    conv.close()


def test_docstrings_from_doxygen():
    doc = capi.fk_attention_forward.__doc__
    assert "head_dim" in doc and "cu_seqlens_q" in doc
    assert "FK_ERROR_SHAPE_MISMATCH" in capi.fk_gemm.__doc__
    for fn in (flashkit.attention, flashkit.gemm, flashkit.monarch, flashkit.blockdiag_linear,
               flashkit.FFTConv, flashkit.Context):
        assert "Raises" in fn.__doc__ or "InvalidArgumentError" in fn.__doc__, fn


def test_log_callback(rng):
    seen = []
    flashkit.set_log_callback(lambda level, msg: seen.append((level, msg)), flashkit.LogLevel.DEBUG)
    try:
        a = ref.randn(rng, (4, 4))
        flashkit.gemm(a, a)
        with pytest.raises(flashkit.InvalidArgumentError):
            flashkit.gemm(a, ref.randn(rng, (5, 4)))
    finally:
        flashkit.set_log_callback(None)
    levels = {lvl for lvl, _ in seen}
    assert capi.FK_LOG_DEBUG in levels and capi.FK_LOG_ERROR in levels
    assert [int(v) for v in flashkit.LogLevel] == [capi.FK_LOG_ERROR, capi.FK_LOG_WARN,
                                                    capi.FK_LOG_INFO, capi.FK_LOG_DEBUG]
    assert flashkit.LogLevel(capi.FK_LOG_DEBUG) is flashkit.LogLevel.DEBUG
    n = len(seen)
    flashkit.gemm(a, a)
    assert len(seen) == n  # removed
    with pytest.raises(TypeError):
        flashkit.set_log_callback(42)


def test_log_callback_set_while_another_thread_logs():
    # set_log_callback waits for the library's log mutex, which a logging thread holds while its
    # callback waits for the GIL: the binding must not hold the GIL meanwhile (it once did, and
    # both threads froze within a second). In a child process with a time limit, so that a
    # deadlock fails the test instead of hanging the suite.
    code = textwrap.dedent("""
        import threading, time, numpy as np, flashkit
        q = np.ones((1, 2, 1, 4), np.float32)
        n = [0, 0]
        stop = threading.Event()
        flashkit.set_log_callback(lambda level, msg: None, 3)
        def caller():
            while not stop.is_set():
                flashkit.attention(q, q, q)
                n[0] += 1
        def setter():
            while not stop.is_set():
                flashkit.set_log_callback(lambda level, msg: None, 3)
                n[1] += 1
        ts = [threading.Thread(target=caller), threading.Thread(target=setter)]
        for t in ts:
            t.start()
        time.sleep(2.0)
        stop.set()
        for t in ts:
            t.join()
        flashkit.set_log_callback(None)
        print("done", n[0] > 0 and n[1] > 0)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done True", r.stdout + r.stderr


def test_log_callback_and_level_are_set_together():
    """Concurrent set_log_callback(f, ERROR) / (g, DEBUG): whichever wins, its callable comes
    with its own level (the callable travels as the library's user_data, set atomically)."""
    import threading
    a = np.ones((4, 4), np.float32)
    for _ in range(30):
        got_f, got_g = [], []
        f = lambda level, msg: got_f.append(level)  # noqa: E731
        g = lambda level, msg: got_g.append(level)  # noqa: E731
        start = threading.Barrier(2)

        def set_f():
            start.wait()
            flashkit.set_log_callback(f, capi.FK_LOG_ERROR)

        def set_g():
            start.wait()
            flashkit.set_log_callback(g, capi.FK_LOG_DEBUG)
        ts = [threading.Thread(target=set_f), threading.Thread(target=set_g)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        try:
            flashkit.gemm(a, a)  # logs its variant at DEBUG
        finally:
            flashkit.set_log_callback(None)
        assert capi.FK_LOG_DEBUG not in got_f  # f only ever comes with ERROR
        assert got_g or not got_f


def test_gil_is_released_during_calls(rng):
    # While one long C call runs, another Python thread must keep running: count its ticks
    # inside the call's time window (with the GIL held there would be none).
    import threading
    import time
    a = ref.randn(rng, (1024, 1024))
    ctx = flashkit.Context("cpu", num_threads=1)
    done = threading.Event()
    ticks = []

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        ctx.gemm(a, a)
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    inside = [x for x in ticks if start < x < end]
    assert len(inside) >= min(5, int((end - start) / 0.001) // 4), (end - start, len(inside))


def test_kernel_family_cpu_points_at_the_device_argument():
    with pytest.raises(flashkit.InvalidArgumentError, match="device='cpu'"):
        flashkit.Context("cpu", kernel_family="cpu")


def test_log_callback_that_calls_flashkit():
    # Callbacks must not call flashkit, but one that does once re-entered the library's log
    # lock (a hang). The safety net: its own errors are raised to it without being delivered,
    # set_log_callback from inside it is refused, and the outer call's message is its own. In a
    # child process with a time limit, so that a regression fails instead of hanging the suite.
    code = textwrap.dedent("""
        import numpy as np, flashkit
        from flashkit import capi
        seen, inner = [], []
        def cb(level, msg):
            seen.append(msg)
            try:
                flashkit.Context("cpu", num_threads=-1)
            except flashkit.InvalidArgumentError as e:
                inner.append(str(e))
            try:
                flashkit.set_log_callback(None)
            except flashkit.InvalidArgumentError as e:
                inner.append(str(e))
        flashkit.set_log_callback(cb, capi.FK_LOG_ERROR)
        try:
            flashkit.Context("cpu", num_threads=100000)
        except flashkit.FlashkitError as e:
            outer = str(e)
        flashkit.set_log_callback(None)
        assert len(seen) == 1, seen
        assert len(inner) == 2 and "num_threads" in inner[0], inner
        assert "inside the log callback" in inner[1], inner
        assert "-1" not in outer and "inside" not in outer, outer
        print("OK", outer)
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("OK"), (r.stdout, r.stderr)


def test_context_and_plan_messages_use_python_names():
    # The C messages name fk_context_options_t / fk_fftconv_plan_options_t fields; Python's
    # arguments are Context(device=..., num_threads=...) and FFTConv's channels.
    with pytest.raises(flashkit.InvalidArgumentError) as e:
        flashkit.Context("cpu", num_threads=-1)
    assert str(e.value).startswith("num_threads: -1"), str(e.value)
    with pytest.raises(flashkit.InvalidArgumentError) as e:
        flashkit.FFTConv(16).resolved_fft_size(-1)
    assert str(e.value).startswith("channels: -1"), str(e.value)
    try:
        flashkit.Context("cuda:1000").close()  # no such device, or no CUDA in this build
    except flashkit.FlashkitError as err:
        assert str(err).startswith("device: "), str(err)
    else:
        pytest.fail("a context on CUDA device 1000 was created")


def test_set_log_callback_inside_a_delivery_while_another_thread_sets_one():
    # Thread A's callback calls set_log_callback while thread B waits inside set_log_callback
    # for the library's log lock (held by A's delivery) and holds the binding's own lock. The
    # in-callback call must be refused at once, not wait for B's lock (a deadlock).
    code = textwrap.dedent("""
        import threading, time, flashkit
        from flashkit import capi
        in_cb, refused = threading.Event(), []
        def cb(level, msg):
            if in_cb.is_set():
                return
            in_cb.set()
            time.sleep(0.5)  # B is now inside set_log_callback, waiting for this delivery
            try:
                flashkit.set_log_callback(None)
            except flashkit.InvalidArgumentError as e:
                refused.append(str(e))
        flashkit.set_log_callback(cb, capi.FK_LOG_ERROR)
        def a():
            try:
                flashkit.Context("cpu", num_threads=-1)
            except flashkit.InvalidArgumentError:
                pass
        def b():
            in_cb.wait()
            flashkit.set_log_callback(lambda level, msg: None, capi.FK_LOG_ERROR)
        ta, tb = threading.Thread(target=a), threading.Thread(target=b)
        ta.start(); tb.start(); ta.join(); tb.join()
        flashkit.set_log_callback(None)
        assert len(refused) == 1 and "inside the log callback" in refused[0], refused
        print("OK")
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("OK"), (r.stdout, r.stderr)
