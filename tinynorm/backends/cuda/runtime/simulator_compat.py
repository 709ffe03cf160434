"""A thread-safe ``cuda.shared.array`` for Numba's CUDA simulator (numba-cuda 0.30).

Numba's simulator runs every CUDA thread of a block as a Python thread, and finds a block's shared
array by the source line that declares it: a lookup in a dict, then an insert if the array is new,
without a lock. Two threads that reach the declaration together (more likely on a loaded machine, where
the interpreter switches threads more often) can each make an array of their own; a block reduction then
combines uninitialised values (softmax's log-sum-exp raised ``math domain error`` that way). The
runtime's own thread blocks (:mod:`.simulator_blocks`) switch threads only at barriers and cannot race
here; Numba's run where ``greenlet`` is missing.

:func:`apply` replaces ``FakeCUDAShared.array`` with a version that makes the array under a lock, once
per block and declaration, with the same key (the declaring file and line). Outside the simulator it
does nothing. ``tests/cuda/sim_races.py`` reproduces the failure with Numba's original and checks the
replacement.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

_lock = threading.Lock()
originals: dict[str, Any] = {}
"""Numba's own ``FakeCUDAShared.array``, once :func:`apply` replaced it."""


def shared_array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> Any:
    """``cuda.shared.array`` in the simulator: one array per block and declaring source line, made by
    the first thread to ask (dynamic shared memory, ``shape`` 0, and alignment are Numba's own code)."""
    if shape == 0 or alignment is not None:
        return originals["array"](self, shape, dtype, alignment)
    import numpy as np
    from numba.core import types
    from numba.np import numpy_support

    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    caller = sys._getframe(1)
    key = caller.f_code.co_filename, caller.f_lineno  # Numba's key: the declaration's file and line
    with _lock:
        array = self._allocations.get(key)
        if array is None:
            array = self._allocations[key] = np.empty(shape, dtype)
    return array


def apply() -> bool:
    """In the simulator, put :func:`shared_array` in place of Numba's (once); returns whether it is."""
    from numba import config

    if not config.ENABLE_CUDASIM:
        return False
    from numba.cuda.simulator import kernelapi

    if not originals:
        originals["array"] = kernelapi.FakeCUDAShared.array
        kernelapi.FakeCUDAShared.array = shared_array
    return True
