"""softmax and log_softmax over the last axis of an array, forward and backward, on the CPU.

Every row is shifted by its maximum before ``exp``, so no logit overflows, and ``-inf`` entries only
contribute zeros. A row that holds a NaN or ``+inf``, or only ``-inf``, gives NaN, as in PyTorch.

softmax also takes attention's two extras, so that attention needs no pass of its own for them: a
``scale`` applied to the logits first, and a ``causal`` mask over the last two axes (L, S), which keeps
key ``j`` of query ``i`` only for ``j <= i`` (PyTorch's ``is_causal``); the masked entries get 0.

With ``s = softmax(scale * x)`` and upstream gradient ``g``:
``softmax``: ``dx = scale * s * (g - sum(g * s))`` (0 where masked); ``log_softmax`` (``out = log s``,
no scale or mask): ``dx = g - s * sum(g)``.

Each row is one pass over memory: the row (scaled) is written to the output, where it stays in the L1
cache for its maximum, its exponentials and their sum, and the division. The exponentials come from
:func:`._exp.exp_nonpositive`, in the data's type and within about a rounding, which LLVM vectorizes
where libm's exp is a scalar call per element; their sum is taken in float64. The maximum is
:func:`._row_max.finite_max`'s, over 16 lanes side by side, a loop LLVM vectorizes. ``-inf`` logits (a
mask) take the fast path, whose exp gives them 0;
a row with a NaN or ``+inf``, or only ``-inf``, is redone with libm's exp and NaN-propagating
comparisons. Measured: docs/benchmarks.md.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._exp import exp_nonpositive
from ._row_max import finite_max
from ._shared import FLOAT_DTYPES, check_like, chunk_bounds, num_chunks, use_parallel
from ._vector_width import wide_vectors

@njit(fastmath=FASTMATH, error_model="numpy", nogil=True)
def _exact_row(dst, n, log):
    """Softmax (or log_softmax) of ``dst[:n]`` in place with libm's exp and NaN-propagating comparisons,
    for a row that is not all finite."""
    largest = dst[0]
    for j in range(1, n):
        if not dst[j] <= largest:  # also takes a NaN, which then stays
            largest = dst[j]
    total = 0.0
    if log:
        for j in range(n):
            total += math.exp(np.float64(dst[j] - largest))
        shift = largest + math.log(total)
        for j in range(n):
            dst[j] = dst[j] - shift
    else:
        for j in range(n):
            dst[j] = math.exp(np.float64(dst[j] - largest))
            total += dst[j]
        for j in range(n):
            dst[j] = dst[j] / total


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _forward_rows(x, out, scale, queries, log, start, stop):
    """Rows [start, stop) of ``out``: softmax (or log_softmax) of ``scale * x`` over the row's first n
    columns, n = min(row % queries + 1, columns) with a causal mask (``queries`` > 0), else all; 0 beyond."""
    wide_vectors()
    columns = x.shape[1]
    for r in range(start, stop):
        row, dst = x[r], out[r]
        n = min(r % queries + 1, columns) if queries else columns
        unbounded = 0  # entries that are NaN or +inf
        for j in range(n):
            dst[j] = scale * row[j]
            unbounded += 0 if dst[j] < np.inf else 1
        for j in range(n, columns):
            dst[j] = 0
        largest = finite_max(dst, n)
        if unbounded or largest == -np.inf:
            _exact_row(dst, n, log)
            continue
        total = 0.0
        if log:
            for j in range(n):
                total += exp_nonpositive(dst[j] - largest)
            shift = largest + np.log(total)
            for j in range(n):
                dst[j] = dst[j] - shift
        else:
            for j in range(n):
                e = exp_nonpositive(dst[j] - largest)
                total += e
                dst[j] = e
            inverse = 1.0 / total
            for j in range(n):
                dst[j] = dst[j] * inverse


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _backward_rows(grad, s, dx, scale, queries, log, start, stop):
    """Rows [start, stop) of the gradient, given the probabilities ``s`` (see the module docstring)."""
    wide_vectors()
    columns = grad.shape[1]
    for r in range(start, stop):
        g, p, dst = grad[r], s[r], dx[r]
        n = min(r % queries + 1, columns) if queries else columns
        total = g.dtype.type(0)
        if log:
            for j in range(n):
                total += g[j]
            for j in range(n):
                dst[j] = g[j] - p[j] * total
        else:
            for j in range(n):
                total += g[j] * p[j]
            for j in range(n):
                dst[j] = scale * p[j] * (g[j] - total)
        for j in range(n, columns):
            dst[j] = 0


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _forward_parallel(x, out, scale, queries, log, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _forward_rows(x, out, scale, queries, log, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _backward_parallel(grad, s, dx, scale, queries, log, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, grad.shape[0])
        _backward_rows(grad, s, dx, scale, queries, log, start, stop)


def _as_rows(name: str, array: object) -> np.ndarray:
    """``array`` as a C-contiguous 2-D (rows, last axis) float array, after checking its type."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {array.dtype}")
    width = array.shape[-1] if array.ndim else 1  # a 0-d array is one row of one element
    return np.ascontiguousarray(array).reshape(math.prod(array.shape[:-1]), width)


def causal_queries(shape: tuple[int, ...], causal: bool) -> int:
    """The causal mask's query count L of an (..., L, S) array (0 without the mask), after checking the
    array has those dims (the CUDA backend checks by it too)."""
    if not causal:
        return 0
    if len(shape) < 2:
        raise ValueError(f"a causal mask needs at least 2 dims (..., L, S), got shape {tuple(shape)}")
    return shape[-2]


def _forward(x: np.ndarray, scale: float, causal: bool, log: bool) -> np.ndarray:
    rows = _as_rows("x", x)
    queries = causal_queries(x.shape, causal)
    out = np.empty_like(rows)
    scale = rows.dtype.type(scale)
    if rows.size and use_parallel(rows.size):
        _forward_parallel(rows, out, scale, queries, log, num_chunks(rows.shape[0]))
    elif rows.size:
        _forward_rows(rows, out, scale, queries, log, 0, rows.shape[0])
    return out.reshape(x.shape)


def _backward(grad: np.ndarray, out: np.ndarray, scale: float, causal: bool, log: bool) -> np.ndarray:
    s = _as_rows("out", out)
    queries = causal_queries(out.shape, causal)
    grad_rows = check_like("grad", grad, out.shape, out.dtype).reshape(s.shape)
    if log:
        s = np.exp(s)  # the probabilities
    dx = np.empty_like(s)
    scale = s.dtype.type(scale)
    if s.size and use_parallel(s.size):
        _backward_parallel(grad_rows, s, dx, scale, queries, log, num_chunks(s.shape[0]))
    elif s.size:
        _backward_rows(grad_rows, s, dx, scale, queries, log, 0, s.shape[0])
    return dx.reshape(out.shape)


def softmax_forward(x: np.ndarray, scale: float = 1.0, causal: bool = False) -> np.ndarray:
    """softmax of ``scale * x`` over the last axis, in x's dtype and shape; with ``causal``, key j of
    query i (the last two axes) is kept only for ``j <= i``, the others are 0."""
    return _forward(x, scale, causal, False)


def log_softmax_forward(x: np.ndarray) -> np.ndarray:
    """log_softmax over the last axis: ``(x - max) - log(sum(exp(x - max)))``, in x's dtype and shape."""
    return _forward(x, 1.0, False, True)


def softmax_backward(grad: np.ndarray, out: np.ndarray, scale: float = 1.0, causal: bool = False) -> np.ndarray:
    """Gradient of :func:`softmax_forward` (same ``scale`` and ``causal``) with respect to its ``x``, given
    its result ``out``: ``scale * out * (grad - sum(grad * out))``, 0 where masked."""
    return _backward(grad, out, scale, causal, False)


def log_softmax_backward(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Gradient of :func:`log_softmax_forward` given its result ``out``: ``grad - exp(out) * sum(grad)``."""
    return _backward(grad, out, 1.0, False, True)
