"""tinynorm's CUDA backend compiles with numpy 2.5, where numba-cuda 0.30 alone does not.

numpy 2.5 removed ``np.row_stack``, which numba-cuda 0.30.4 looks up at its first compile
(``tinynorm/backends/cuda/runtime/numpy_compat.py`` explains the shim). Each test runs in a fresh
interpreter. With numpy < 2.5 (which has ``row_stack``) the first two have nothing to show and skip;
numba itself cannot run on numpy 2.4 with ``row_stack`` deleted, so numpy 2.5 cannot be imitated.
"""
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the simulator compiles nothing", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
COMPILE = ("import numpy\nfrom numba import cuda\n"
           "ptx = cuda.compile_ptx(lambda x: None, 'void(float32[::1])', cc=(9, 0))[0]\n"
           "print('compiled', '.entry' in ptx, hasattr(numpy, 'row_stack'))\n")
needs_numpy_2_5 = pytest.mark.skipif(hasattr(np, "row_stack"), reason=f"numpy {np.__version__} still has row_stack")


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


@needs_numpy_2_5
def test_numba_cuda_alone_fails_without_row_stack():
    """The control: the failure the shim exists for (so the next test can fail)."""
    result = run(COMPILE)
    assert result.returncode != 0 and "row_stack" in result.stderr, result.stdout + result.stderr[-2000:]


@needs_numpy_2_5
def test_the_shim_lets_numba_cuda_compile_and_leaves_numpy_as_it_was():
    result = run("import tinynorm.backends.cuda\n" + COMPILE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["compiled", "True", "False"]  # no row_stack left in numpy


def test_the_shim_does_nothing_where_numpy_has_row_stack():
    result = run("import numpy\nfrom tinynorm.backends.cuda.runtime import numpy_compat\n"
                 "print(numpy_compat.apply() if hasattr(numpy, 'row_stack') else 'no row_stack')\n")
    assert result.returncode == 0 and result.stdout.strip() in ("False", "no row_stack"), result.stderr[-2000:]
