"""Fixtures shared by all tests (helpers to import are in ``helpers.py``)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
