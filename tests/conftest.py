"""Fixtures shared by all tests (helpers to import are in ``helpers.py``)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def device():
    """The device of the device-generic tests: the CPU here; ``tests/cuda/sim_*.py`` call the same
    test functions with ``'cuda'`` in Numba's simulator."""
    return "cpu"
