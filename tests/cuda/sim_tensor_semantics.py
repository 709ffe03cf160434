"""``tests/test_tensor_semantics.py`` on ``device='cuda'``, in Numba's CUDA simulator: in-place ops,
versions, views, promotion, ``autograd.grad`` and hooks behave on the GPU as on the CPU (and as in
PyTorch). Run by ``test_cuda_simulator.py`` (or ``NUMBA_ENABLE_CUDASIM=1 python -m pytest <this file>``).
"""
import sys
from pathlib import Path

import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_tensor_semantics import *  # noqa: E402, F401, F403  (the same tests, collected here)


@pytest.fixture
def device():
    return "cuda"
