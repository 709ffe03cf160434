"""The kernels' tests reach the parallel paths with small arrays: the threshold above which a kernel
runs in parallel is lowered for them (it is a speed setting, not part of any kernel's result)."""
import pytest

from tinynorm.kernels.cpu import _config

@pytest.fixture(autouse=True)
def small_parallel_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_config, "PARALLEL_THRESHOLD", 32_768)
