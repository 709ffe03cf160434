"""Fixtures shared by all tests (helpers to import are in ``helpers.py``)."""
import numpy as np
import pytest

_simulator_pools = []  # the CUDA simulator's pool, once started


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.hookimpl(trylast=True)  # after -k/-m deselection
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the CUDA simulator files now, in subprocesses, and check them last, so that they run while
    this process runs the other tests (``tests/cuda/test_cuda_simulator.py``)."""
    simulator = [item for item in items if getattr(item, "originalname", None) == "test_in_the_simulator"]
    if simulator:
        items[:] = [item for item in items if item not in simulator] + simulator
        pool = simulator[0].module.POOL
        pool.start([item.callspec.params["name"] for item in simulator])
        _simulator_pools.append(pool)


def pytest_sessionfinish() -> None:
    for pool in _simulator_pools:
        pool.close()
