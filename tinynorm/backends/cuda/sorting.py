"""Sorting, unique values and nonzero positions of :class:`CudaArray` views.

``argsort`` and ``unique`` run on the host: the array is copied to host memory, numpy computes the
answer (a stable sort), and the result is copied back, so the host waits for the GPU. The sizes
tinynorm's users sort (scores, class counts, top-k of logits) move in microseconds over PCIe, and a
sort has no simple fast kernel; ``unique`` must wait for the GPU anyway to size its result, as
PyTorch's does. ``nonzero`` runs on the device, reading back only the count.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...kernels.cuda import indexing as kernels
from . import creation
from .array import CudaArray, check_array

__all__ = ["argsort", "nonzero", "unique"]


def argsort(a: CudaArray, axis: int = -1) -> CudaArray:
    """The int64 indices that sort ``a`` along ``axis``, stably (equal values keep their order; NaN last)."""
    host = creation.to_numpy(check_array("argsort: a", a))
    return creation.from_numpy(np.argsort(host, axis=axis, kind="stable").astype(np.int64))


def unique(a: CudaArray, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None) -> Any:
    """numpy's ``unique`` of ``a``: the sorted distinct values (rows along ``axis``), and optionally
    the inverse indices and the counts, each a CudaArray."""
    host = creation.to_numpy(check_array("unique: a", a))
    results = np.unique(host, return_inverse=return_inverse, return_counts=return_counts, axis=axis)
    if not (return_inverse or return_counts):
        return creation.from_numpy(results)
    return tuple(creation.from_numpy(r) for r in results)


def nonzero(a: CudaArray) -> tuple[CudaArray, ...]:
    """numpy's ``nonzero``: one int64 array per dim (``a.ndim >= 1``) of the positions of ``a``'s nonzero
    entries, in C order."""
    if check_array("nonzero: a", a).ndim == 0:
        raise ValueError("nonzero: a 0-d array has no positions; reshape it to 1-d first")
    mask = a if a.dtype == np.bool_ else a != 0
    coords = kernels.nonzero(mask.contiguous().reshape(mask.size), a.shape)
    return tuple(coords[k] for k in range(a.ndim))
