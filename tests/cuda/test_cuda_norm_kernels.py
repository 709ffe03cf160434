"""Runs the CUDA kernel tests (tests/cuda/sim_norm_kernels.py) in Numba's CUDA simulator.

The simulator must be switched on before Numba is imported, and this pytest process has imported it
already, so the tests run in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``. This test fails when any of
them fails, or when none ran or some were skipped: the simulator tests never disappear silently.
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SIMULATOR_TESTS = Path(__file__).with_name("sim_norm_kernels.py")


def test_cuda_kernels_in_the_simulator():
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.fail("the CUDA kernels need numba-cuda: install the cuda extra (pip install -e '.[cuda]')")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(SIMULATOR_TESTS), "-q", "-p", "no:cacheprovider"],
        cwd=SIMULATOR_TESTS.parents[2], env=env, capture_output=True, text=True, timeout=900, check=False)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"skipped|deselected|xfail", summary), report


def test_import_tinynorm_does_not_import_numba_cuda():
    """Importing numba.cuda is slow and may look for a driver: only tinynorm.kernels.cuda may do it."""
    code = ("import sys, tinynorm; "
            "print([m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda.numba.cuda'))])")
    result = subprocess.run([sys.executable, "-c", code], cwd=SIMULATOR_TESTS.parents[2], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
