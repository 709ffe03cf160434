"""The check every indexing op and loss makes before its kernel reads at integer indices: how many
entries lie outside ``[0, upper)`` (and are not ``ignore_index``), and how many equal ``ignore_index``.

:func:`count_indices_numpy` is the reference: a temporary array for each comparison, four array
passes without an ignore index and eight with one. :func:`count_indices` counts both in one compiled
pass over native-order signed or narrow unsigned indices, for the few indices an op checks per call:
the targets of a loss, an embedding's ids (measured: docs/benchmarks.md). uint64 (which Numba would
compare with an int64 in float64), other dtypes, subclasses and non-int bounds keep numpy's form.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_INT64 = np.iinfo(np.int64)
_LOOP_DTYPES = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32))


def count_indices_numpy(indices: np.ndarray, upper: int, ignore_index: int | None = None) -> tuple[int, int]:
    """``(outside, ignored)`` with numpy's comparisons, which are exact for any integer dtype and int.
    (``tinynorm.backends.indices_out_of_range``, which ops use to name the bad entries, is the same
    ``outside`` mask; kernels import nothing from the backends.)"""
    outside = (indices < 0) | (indices >= upper)
    if ignore_index is None:
        return int(np.count_nonzero(outside)), 0
    ignored = indices == ignore_index
    return int(np.count_nonzero(outside & ~ignored)), int(np.count_nonzero(ignored))


@njit(cache=True, nogil=True)
def _count(indices, upper, ignored, ignoring):
    """One pass: entries equal to ``ignored`` (when ``ignoring``), and the other entries outside
    [0, upper). ``indices`` is 1-D; Numba compares each entry with the int64 bounds as an int64, which
    holds it exactly."""
    outside = 0
    matched = 0
    for i in range(indices.size):
        value = indices[i]
        if ignoring and value == ignored:
            matched += 1
        elif value < 0 or value >= upper:
            outside += 1
    return outside, matched


def count_indices(indices: np.ndarray, upper: int, ignore_index: int | None = None) -> tuple[int, int]:
    """``(outside, ignored)``: entries of ``indices`` outside ``[0, upper)`` and not ``ignore_index``,
    and entries equal to ``ignore_index`` (0 when None), as :func:`count_indices_numpy` counts them."""
    if (type(indices) is not np.ndarray or indices.dtype not in _LOOP_DTYPES or not _is_int(upper)
            or not 0 <= int(upper) <= _INT64.max or not (ignore_index is None or _is_int(ignore_index))):
        return count_indices_numpy(indices, upper, ignore_index)
    ignore = None if ignore_index is None else int(ignore_index)
    ignoring = ignore is not None and _INT64.min <= ignore <= _INT64.max  # else it equals no entry
    outside, ignored = _count(indices.reshape(-1), int(upper), ignore if ignoring else 0, ignoring)
    return int(outside), int(ignored)


def _is_int(value: object) -> bool:
    """An int or a numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
