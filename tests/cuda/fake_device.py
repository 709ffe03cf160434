"""A stand-in GPU for tinynorm's CUDA host code: everything runs but the driver's own work.

``with fake_device() as launches: ...`` runs tinynorm's CUDA host code without a GPU, on the classes a
GPU run uses: storages at made-up device addresses from a fake driver (through the real caching
allocator), launch plans made for every kernel without compiling it, and a stand-in for
``cuLaunchKernel`` that records each launch (``("driver", handle)``) after the plan has filled its
parameter block. A launch that misses the driver-level path is recorded as ``("dispatcher", kernel)``.
Copies to the device do nothing and copies to the host give zeros, so no kernel result means anything:
this is for host time and host code (``benchmarks/bench_host_overhead.py --fake-device``,
``tests/cuda/test_fake_device.py``). Leaving the ``with`` block restores everything it replaced.

Numba's CUDA simulator must be off (its arrays are host arrays, and its launches run the kernels).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np

SM_COUNT = 132  # an H200's


class FakeBlock:
    """A driver block at a made-up address."""

    def __init__(self, address: int) -> None:
        self.address = address


class RecordingDriver:
    """Stands in for ``cuda.bindings.driver`` in the launch plans: ``cuLaunchKernel`` records the launch."""

    CUresult = SimpleNamespace(CUDA_SUCCESS=0)
    CUstream = int

    def __init__(self, launches: list) -> None:
        self.launches = launches

    def cuLaunchKernel(self, function: Any, *configuration: Any) -> tuple:  # noqa: N802  (the driver's name)
        self.launches.append(("driver", function))
        return (self.CUresult.CUDA_SUCCESS,)


@contextlib.contextmanager
def fake_device() -> Iterator[list]:
    """Install the fake device (see the module docstring); yields the list the launches go to."""
    import numba

    import tinynorm
    from tinynorm.backends.cuda.runtime import launch, memory
    from tinynorm.kernels.cuda import _shared

    if numba.config.ENABLE_CUDASIM:
        raise RuntimeError("the fake device needs numba-cuda's real classes: unset NUMBA_ENABLE_CUDASIM")
    launches: list = []
    driver = RecordingDriver(launches)
    next_address = [1 << 32]

    def fake_block(size: int) -> FakeBlock:
        next_address[0] += size
        return FakeBlock(next_address[0] - size)

    cache = memory.BlockCache(fake_block, lambda: None)
    replacements = [
        (memory, "block_cache", lambda: cache),
        (memory, "copy_to_device", lambda storage, host: None),
        (memory, "copy_to_host", lambda storage, start, count: np.zeros(count, storage.dtype)),
        (launch, "driver_function", lambda kernel, argtypes: (("function", kernel, argtypes), None)),
        (launch, "_driver", lambda: driver),
        (launch, "dispatch", lambda kernel, grid, block, shared, args: launches.append(("dispatcher", kernel))),
        (launch, "_plans", {}),
        (launch, "_fast", {"enabled": True}),
        (tinynorm.cuda, "_unavailable_reason", lambda: None),  # device='cuda' is allowed
        (_shared, "sm_count", _fixed_sm_count(_shared.sm_count)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in replacements]
    try:
        for owner, name, value in replacements:
            setattr(owner, name, value)
        yield launches
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
        _shared.sm_count.cache_clear()


def _fixed_sm_count(sm_count: Any) -> Any:
    """``sm_count`` (a cached function that modules imported by name) primed with an H200's count: the
    cache, not the name, is what every importer shares. The context manager clears it on exit."""
    from numba import cuda

    sm_count.cache_clear()
    real = cuda.get_current_device
    cuda.get_current_device = lambda: SimpleNamespace(MULTIPROCESSOR_COUNT=SM_COUNT)
    try:
        sm_count()
    finally:
        cuda.get_current_device = real
    return sm_count
