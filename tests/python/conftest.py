"""Shared fixtures of the flashkit Python suite.

Run from a build tree with ``PYTHONPATH=<build>/bindings/python`` (ctest sets it), or against
an installed wheel. Tests marked ``gpu`` need torch with CUDA and a CUDA-enabled flashkit;
they skip otherwise.
"""

import gc
import os
import zlib

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device, torch with CUDA and flashkit built with CUDA")


@pytest.fixture
def rng(request):
    # A fresh seed per test, derived from its name so a failure reproduces.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


@pytest.fixture
def no_gc():
    """Garbage collected now, then no collection until the test ends: for tests that record
    every destroy call, which a Context or plan left in a reference cycle by an earlier test
    would otherwise add whenever the cycle collector happened to run inside the test."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def pytest_sessionfinish(session, exitstatus):
    """With FLASHKIT_PYTEST_ALL_SKIPPED_RC set (ctest's gpu suite), a run whose every test
    skipped exits with that code, so ctest reports the suite as skipped instead of passed."""
    rc = os.environ.get("FLASHKIT_PYTEST_ALL_SKIPPED_RC")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not rc or reporter is None or exitstatus not in (0, 5):
        return
    stats = reporter.stats
    ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error", "xfailed",
                                               "xpassed"))
    if ran == 0:
        session.exitstatus = int(rc)
