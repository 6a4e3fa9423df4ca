"""The Python examples run as a user would run them (NumPy on the CPU backend, or whichever
backend the default context picks) and check themselves: each asserts its result against a NumPy
reference, so a nonzero exit is a wrong answer or a broken example."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("name", ["kvcache_decode.py", "attention.py"])
def test_example_runs(name):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", name)],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max |flashkit" in r.stdout
