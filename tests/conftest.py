"""Fixtures and collection rules shared by all tests (helpers to import are in ``helpers.py``)."""
from pathlib import Path

import numpy as np
import pytest

# What ``make check`` (``-m "not slow"``) leaves out: the CUDA tests (PTX compilation, the simulator, the fake
# device), the experiments, the MPI runs and the tutorial scripts. ``make test`` runs everything.
SLOW_DIRECTORIES = {"cuda", "compat"}
SLOW_FILE_PREFIXES = ("test_experiment_", "test_distributed", "test_gpu_session")
_simulator_pools = []  # the CUDA simulator's pool, once started


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _is_simulator_test(item: pytest.Item) -> bool:
    return getattr(item, "originalname", None) == "test_in_the_simulator"


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tests, and put the CUDA simulator's last: their files run in subprocesses started as
    soon as collection ends (``tests/cuda/test_cuda_simulator.py``), while this process runs the others."""
    for item in items:
        path = Path(item.fspath)
        if path.parent.name in SLOW_DIRECTORIES or path.name.startswith(SLOW_FILE_PREFIXES):
            item.add_marker(pytest.mark.slow)
    items.sort(key=_is_simulator_test)  # a stable sort: the order is otherwise kept


def pytest_collection_finish(session: pytest.Session) -> None:
    simulator = [item for item in session.items if _is_simulator_test(item)]
    if simulator:
        pool = simulator[0].module.POOL
        pool.start([item.callspec.params["name"] for item in simulator])
        _simulator_pools.append(pool)


def pytest_sessionfinish() -> None:
    for pool in _simulator_pools:
        pool.close()


@pytest.fixture
def device():
    """The device of the device-generic tests: the CPU here; ``tests/cuda/sim_*.py`` call the same
    test functions with ``'cuda'`` in Numba's simulator."""
    return "cpu"
