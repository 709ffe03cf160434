"""Runs the CUDA tests (every ``tests/cuda/sim_*.py``) in Numba's CUDA simulator.

The simulator must be switched on before Numba is imported, and this pytest process has imported it
already, so each file runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``. A file's test fails when
any of its tests fails, or when none ran or some were skipped: the simulator tests never disappear
silently. Run one file directly with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_ops.py``.
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SIMULATOR_FILES = sorted(path.name for path in HERE.glob("sim_*.py"))


@pytest.mark.parametrize("name", SIMULATOR_FILES)
def test_in_the_simulator(name):
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.fail("the CUDA kernels need numba-cuda: install the cuda extra (pip install -e '.[cuda]')")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(HERE / name), "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"skipped|deselected|xfail", summary), report


def test_import_tinynorm_does_not_import_numba_cuda():
    """Importing numba.cuda is slow and may look for a driver: only tinynorm.kernels.cuda may do it."""
    code = ("import sys, tinynorm; "
            "print([m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda.numba.cuda'))])")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
