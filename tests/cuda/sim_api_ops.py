"""The ``tests/test_api_*.py`` files on ``device='cuda'``, in Numba's CUDA simulator: every function and
method of the PyTorch API tested there gives PyTorch's values, dtypes, gradients and errors on the GPU
too. Run by ``test_cuda_simulator.py`` (or ``NUMBA_ENABLE_CUDASIM=1 python -m pytest <this file>``).

The finite-difference checks (``gradcheck`` perturbs host memory) run on the CPU only.
"""
import sys
from pathlib import Path

import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_api_indexing  # noqa: E402
import test_api_linalg  # noqa: E402
import test_api_math  # noqa: E402
import test_api_pointwise  # noqa: E402
import test_api_products  # noqa: E402
import test_api_reductions  # noqa: E402
import test_api_runtime  # noqa: E402
import test_api_selection  # noqa: E402
import test_api_shape  # noqa: E402
import test_api_statistics  # noqa: E402
import test_api_tensor  # noqa: E402

MODULES = [test_api_indexing, test_api_linalg, test_api_math, test_api_pointwise, test_api_products,
           test_api_reductions, test_api_runtime, test_api_selection, test_api_shape, test_api_statistics,
           test_api_tensor]

# The same tests, collected here under their module's name (two modules may name a test alike).
for _module in MODULES:
    for _name, _test in vars(_module).items():
        if _name.startswith("test_") and "device" in _test.__code__.co_varnames[:_test.__code__.co_argcount]:
            globals()[f"test_{_module.__name__.removeprefix('test_api_')}__{_name.removeprefix('test_')}"] = _test


@pytest.fixture
def device():
    return "cuda"
