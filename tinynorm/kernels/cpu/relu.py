"""ReLU and its derivative, one pass over the data each, with PyTorch's values at every input.

``relu(x)`` is 0 where ``x < 0`` and ``x`` elsewhere, so NaN and -0.0 pass through (PyTorch's
``clamp_min(x, 0)``); its gradient is 0 where the output is ``<= 0`` and the upstream gradient elsewhere
(PyTorch's ``threshold_backward``), so a NaN output passes its gradient on and an infinite or NaN
gradient of a zeroed element is 0, where ``grad * (out > 0)`` would make it NaN. The loops run several
times faster than numpy's ``maximum(x, 0)`` and ``grad * (out > 0)`` (docs/benchmarks.md). They are
compiled without ``fastmath``, whose no-signed-zeros flag would let LLVM turn -0.0 into 0.0.

float32 and float64 arrays in C or Fortran order take the kernels (a gradient in another layout is first
copied into the output's order); other dtypes and strided inputs take numpy's ``where`` with the same
conditions. Results keep the input's memory order.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._shared import FLOAT_DTYPES, chunk_bounds, num_chunks, use_parallel


@njit(cache=True)
def _relu_range(x, y, start, stop):
    x, y = x[start:stop], y[start:stop]  # indices from 0: provably in bounds, so LLVM loads vectors
    for i in range(x.size):
        y[i] = 0 if x[i] < 0 else x[i]


@njit(cache=True)
def _relu_backward_range(grad, out, dx, start, stop):
    grad, out, dx = grad[start:stop], out[start:stop], dx[start:stop]
    for i in range(out.size):
        dx[i] = 0 if out[i] <= 0 else grad[i]


# One driver per kernel, calling it directly: a driver given the kernel as an argument is compiled
# afresh in every process (Numba's cache key would hold the kernel's address).
@njit(cache=True, parallel=True)
def _relu_parallel(x, y, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.size)
        _relu_range(x, y, start, stop)


@njit(cache=True, parallel=True)
def _relu_backward_parallel(grad, out, dx, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, out.size)
        _relu_backward_range(grad, out, dx, start, stop)


def _flat(array: np.ndarray) -> np.ndarray | None:
    """``array`` as a flat view in memory order, or None when it is not contiguous or not float32/64."""
    if array.dtype not in FLOAT_DTYPES:
        return None
    if array.flags.c_contiguous:
        return array.reshape(-1)
    if array.flags.f_contiguous:
        return array.reshape(-1, order="F")
    return None


def _check(name: str, array: object) -> np.ndarray:
    """``array`` as an ndarray: a numpy scalar (numpy's arithmetic on 0-d arrays returns one) becomes 0-d."""
    if isinstance(array, np.generic):
        return np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    return array


def relu(x: np.ndarray) -> np.ndarray:
    """``0 where x < 0, else x``, in ``x``'s dtype and memory order."""
    flat_x = _flat(_check("x", x))
    if flat_x is None:
        return np.where(x < 0, np.zeros((), x.dtype), x)
    y = np.empty_like(x)
    if use_parallel(x.size):
        _relu_parallel(flat_x, _flat(y), num_chunks(x.size))
    else:
        _relu_range(flat_x, _flat(y), 0, x.size)
    return y


def relu_backward(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``0 where out <= 0, else grad``: the gradient of :func:`relu` given its output ``out``."""
    grad, out = _check("grad", grad), _check("out", out)
    if grad.shape != out.shape:
        raise ValueError(f"grad must have out's shape {out.shape}, got {grad.shape}")
    flat_out = _flat(out)
    if flat_out is None or grad.dtype != out.dtype:
        return np.where(out <= 0, np.zeros((), grad.dtype), grad)
    # A gradient that arrives as a broadcast or strided view (a mean's, a pooling's) is copied into
    # out's order first: the copy and the kernel are many times faster than numpy's where on the view.
    grad = np.asarray(grad, order="C" if out.flags.c_contiguous else "F")
    dx = np.empty_like(grad)
    flat = (_flat(grad), flat_out, _flat(dx))
    if use_parallel(out.size):
        _relu_backward_parallel(*flat, num_chunks(out.size))
    else:
        _relu_backward_range(*flat, 0, out.size)
    return dx
