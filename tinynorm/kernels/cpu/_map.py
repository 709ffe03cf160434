"""Elementwise maps over flat arrays, split into one chunk per thread when there is enough work.

A map kernel is an ``@njit`` function ``kernel(inputs..., out, start, stop)`` that writes
``out[start:stop]`` from the same range of its inputs; :func:`map_unary` and :func:`map_binary` run it
over the whole array, serially below ``PARALLEL_THRESHOLD`` elements and otherwise as one chunk per
thread (``_shared.use_parallel``).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._shared import chunk_bounds, num_chunks, use_parallel


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _unary_parallel(kernel, x, out, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.size)
        kernel(x, out, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _binary_parallel(kernel, a, b, out, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, a.size)
        kernel(a, b, out, start, stop)


def map_unary(kernel: Callable, x: np.ndarray, out: np.ndarray) -> None:
    """``kernel(x, out, start, stop)`` over the flat arrays ``x`` and ``out`` of one size."""
    if use_parallel(x.size):
        _unary_parallel(kernel, x, out, num_chunks(x.size))
    else:
        kernel(x, out, 0, x.size)


def map_binary(kernel: Callable, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``kernel(a, b, out, start, stop)`` over the flat arrays ``a``, ``b`` and ``out`` of one size."""
    if use_parallel(a.size):
        _binary_parallel(kernel, a, b, out, num_chunks(a.size))
    else:
        kernel(a, b, out, 0, a.size)
