"""softmax and log_softmax over the last axis of an array, forward and backward, on the CPU.

Every row is shifted by its maximum before ``exp``, so no logit overflows, and ``-inf`` entries (a
causal mask) only contribute zeros. A row that is all ``-inf`` gives NaN, as in PyTorch.

With ``s = softmax(x)`` and upstream gradient ``g``:
``softmax``: ``dx = s * (g - sum(g * s))``; ``log_softmax`` (``out = log s``): ``dx = g - s * sum(g)``.

The exponentials are left to numpy's ``exp``: it is SIMD-vectorized, where a Numba loop calls the scalar
libm ``exp`` per element (without SVML), several times slower (measured: docs/benchmarks.md).
So the forward is a Numba pass (shift by the row max), numpy's ``exp`` in place, and a Numba pass (divide
by the row sum); no temporary array for softmax, against two and five passes for plain numpy.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._shared import FLOAT_DTYPES, check_like, chunk_bounds, num_chunks, use_parallel


@njit(cache=True, fastmath=FASTMATH)
def _shift_rows(x, out, start, stop):
    """Rows [start, stop): ``out = x - max(x)`` per row."""
    for r in range(start, stop):
        row, dst = x[r], out[r]
        m = row[0]
        for j in range(1, row.size):
            m = max(m, row[j])
        for j in range(row.size):
            dst[j] = row[j] - m


@njit(cache=True, fastmath=FASTMATH)
def _normalize_rows(out, e, log, start, stop):
    """Rows [start, stop), given ``e = exp(out)``: ``out = e / sum(e)``, or ``out -= log(sum(e))`` if ``log``."""
    for r in range(start, stop):
        row, dst = e[r], out[r]
        total = row.dtype.type(0)
        for j in range(row.size):
            total += row[j]
        if log:
            lse = np.log(total)
            for j in range(row.size):
                dst[j] -= lse
        else:
            scale = row.dtype.type(1) / total
            for j in range(row.size):
                dst[j] = row[j] * scale


@njit(cache=True, fastmath=FASTMATH)
def _backward_rows(grad, s, dx, log, start, stop):
    """Rows [start, stop) of the gradient, given the probabilities ``s``."""
    for r in range(start, stop):
        g, p, dst = grad[r], s[r], dx[r]
        total = g.dtype.type(0)
        if log:
            for j in range(g.size):
                total += g[j]
            for j in range(g.size):
                dst[j] = g[j] - p[j] * total
        else:
            for j in range(g.size):
                total += g[j] * p[j]
            for j in range(g.size):
                dst[j] = p[j] * (g[j] - total)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _shift_parallel(x, out, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _shift_rows(x, out, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _normalize_parallel(out, e, log, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, out.shape[0])
        _normalize_rows(out, e, log, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _backward_parallel(grad, s, dx, log, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, grad.shape[0])
        _backward_rows(grad, s, dx, log, start, stop)


def _as_rows(name: str, array: object) -> np.ndarray:
    """``array`` as a C-contiguous 2-D (rows, last axis) float array, after checking its type."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {array.dtype}")
    width = array.shape[-1] if array.ndim else 1  # a 0-d array is one row of one element
    return np.ascontiguousarray(array).reshape(math.prod(array.shape[:-1]), width)


def _forward(x: np.ndarray, log: bool) -> np.ndarray:
    rows = _as_rows("x", x)
    out = np.empty_like(rows)
    if rows.size == 0:
        return out.reshape(x.shape)
    chunks = num_chunks(rows.shape[0]) if use_parallel(rows.size) else 1
    if chunks > 1:
        _shift_parallel(rows, out, chunks)
    else:
        _shift_rows(rows, out, 0, rows.shape[0])
    e = np.exp(out) if log else np.exp(out, out=out)  # log_softmax still needs x - max afterwards
    if chunks > 1:
        _normalize_parallel(out, e, log, chunks)
    else:
        _normalize_rows(out, e, log, 0, rows.shape[0])
    return out.reshape(x.shape)


def _backward(grad: np.ndarray, out: np.ndarray, log: bool) -> np.ndarray:
    s = _as_rows("out", out)
    grad_rows = check_like("grad", grad, out.shape, out.dtype).reshape(s.shape)
    if log:
        s = np.exp(s)  # the probabilities
    dx = np.empty_like(s)
    if use_parallel(s.size):
        _backward_parallel(grad_rows, s, dx, log, num_chunks(s.shape[0]))
    elif s.size:
        _backward_rows(grad_rows, s, dx, log, 0, s.shape[0])
    return dx.reshape(out.shape)


def softmax_forward(x: np.ndarray) -> np.ndarray:
    """softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``, in x's dtype and shape."""
    return _forward(x, False)


def log_softmax_forward(x: np.ndarray) -> np.ndarray:
    """log_softmax over the last axis: ``(x - max) - log(sum(exp(x - max)))``, in x's dtype and shape."""
    return _forward(x, True)


def softmax_backward(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Gradient of :func:`softmax_forward` given its result ``out``: ``out * (grad - sum(grad * out))``."""
    return _backward(grad, out, False)


def log_softmax_backward(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Gradient of :func:`log_softmax_forward` given its result ``out``: ``grad - exp(out) * sum(grad)``."""
    return _backward(grad, out, True)
