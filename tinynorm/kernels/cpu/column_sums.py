"""A matrix's column sums (a Linear layer's bias gradient) in one serial pass, as numpy adds them.

numpy reduces axis 0 of a C-ordered matrix by adding its rows one after another into the result row,
from +0.0; this loop does the same additions in the same order, so the sums are numpy's (NaN where
numpy's are NaN, its sign aside), 2-3x faster (docs/benchmarks.md). It stays on the calling thread:
the sum as ``ones @ a`` was faster alone but, run on OpenBLAS's threads, made whole training steps
0-5% slower (the woken threads spin while tinynorm's parallel kernels want the cores). Compiled
without ``fastmath``, which would let LLVM reorder the sums.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ._shared import FLOAT_DTYPES


@njit(cache=True, nogil=True)
def _add_rows(a, out):
    out[:] = 0  # numpy starts from +0.0 too: a column of -0.0 sums to +0.0
    for i in range(a.shape[0]):
        row = a[i]
        for j in range(out.size):
            out[j] += row[j]


def takes(a: np.ndarray, axis: Any, keepdims: bool) -> bool:
    """Whether :func:`column_sums` computes ``np.sum(a, axis, keepdims=keepdims)``: the sum over axis 0
    (an int) of a C-ordered float32/float64 ndarray with a row and at least two columns. numpy adds a
    single column, which is contiguous, pairwise, other layouts in their own order, and a subclass (a
    masked array, a matrix) sums its own way."""
    return (type(axis) is int and axis == 0 and not keepdims and type(a) is np.ndarray and a.ndim == 2
            and a.dtype in FLOAT_DTYPES and a.flags.c_contiguous and a.shape[0] > 0 and a.shape[1] > 1)


def column_sums(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=0)`` of a C-ordered float32/float64 matrix with at least one row and two columns, the
    same values (numpy sums a single, contiguous, column pairwise)."""
    out = np.empty(a.shape[1], dtype=a.dtype)
    _add_rows(a, out)
    return out
