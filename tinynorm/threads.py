"""``set_num_threads``/``get_num_threads``: how many threads tinynorm's parallel CPU kernels use; and
``set_float32_matmul_precision``, which scripts set and tinynorm accepts.

The kernels are Numba ``parallel=True`` loops, so this is Numba's thread count for the calling
thread. Numba fixes the size of its pool when it starts (``NUMBA_NUM_THREADS``, by default the number
of cores): a larger request uses the whole pool. numpy's own matrix products run on BLAS threads,
which ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` set before Python starts.
"""
from __future__ import annotations

import operator
import warnings
from typing import Any

import numba


def set_num_threads(num: Any) -> None:
    """Use ``num`` threads (at most Numba's pool size) in the parallel CPU kernels of this thread."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    numba.set_num_threads(min(operator.index(num), numba.config.NUMBA_NUM_THREADS))


def get_num_threads() -> int:
    """The number of threads the parallel CPU kernels of this thread use."""
    return numba.get_num_threads()


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Accept PyTorch's setting (``'highest'``, ``'high'``, ``'medium'``) for scripts that make it, and
    report it back. tinynorm's float32 matrix products always compute in float32 (no TF32 or bfloat16
    shortcuts), which is ``'highest'``; another value, as in PyTorch, only warns."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The precision last set by :func:`set_float32_matmul_precision` (``'highest'`` at first)."""
    return _matmul_precision
