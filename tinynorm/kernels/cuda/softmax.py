"""softmax and log_softmax over the rows of a 2-D device array, forward and backward, on the GPU.

Same semantics as :mod:`tinynorm.kernels.cpu.softmax`: every row is shifted by its maximum before
``exp`` (no overflow, ``-inf`` entries give zeros, an all ``-inf`` row gives NaN); softmax takes
attention's ``scale`` of the logits and a causal mask (row r keeps its first ``r % queries + 1``
columns, the others are 0); and with ``s = softmax(scale * x)`` and upstream gradient ``g``:
``softmax``: ``dx = scale * s * (g - sum(g * s))``;
``log_softmax`` (``out = log s``): ``dx = g - s * sum(g)``.

One block per row (a grid-stride loop over rows): each thread walks the columns ``t, t + threads, ...``
and the block combines the threads' maxima and sums with a tree in shared memory, always in the same
order, so results are bit-identical from run to run. The arithmetic is in the array's dtype: float32
data never touches float64 (the shared buffer and the constants are built per dtype by a factory),
float64 data is computed in float64. Arrays in are C-contiguous ``(rows, cols)`` float32/float64
device arrays (host numpy arrays are copied over, for tests).
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, from_dtype

from ._shared import check_array, grid_size, output
from ...backends.cuda.runtime.launch import jit, launch

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
MAX_THREADS = 256  # threads per block, a power of two (the tree halves it)


def threads_for(cols: int) -> int:
    """Threads per block for rows of ``cols``: a power of two from one warp up to MAX_THREADS."""
    threads = 32
    while threads < min(cols, MAX_THREADS):
        threads *= 2
    return threads


@cuda.jit(device=True)
def block_reduce(buffer, value, take_max):
    """The max (``take_max``) or the sum of ``value`` over the block, returned to every thread.

    A tree in ``buffer`` (shared, at least blockDim.x entries; blockDim.x a power of two): thread ``t``
    combines entries ``t`` and ``t + half`` while ``half`` halves, so the order never changes. Every
    thread of the block must call it.
    """
    t = cuda.threadIdx.x
    buffer[t] = value
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if t < half:
            other = buffer[t + half]
            if take_max:
                buffer[t] = max(buffer[t], other)
            else:
                buffer[t] = buffer[t] + other
        cuda.syncthreads()
        half //= 2
    result = buffer[0]
    cuda.syncthreads()  # everyone has read the result before the buffer is used again
    return result


@cuda.jit(device=True)
def row_max(buffer, x, row, scale, n):
    """The maximum of ``scale * x[row, :n]`` (``x`` 2-D, n >= 1), returned to every thread of the block:
    each thread takes the columns ``t, t + threads, ...``, then :func:`block_reduce` combines them. Every
    thread must call it."""
    largest = scale * x[row, 0]
    for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        largest = max(largest, scale * x[row, j])
    return block_reduce(buffer, largest, True)


@cache
def forward_kernel(dtype: np.dtype):
    """The forward kernel for ``dtype`` data: ``kernel(x, out, log, scale, queries)``, ``log`` choosing
    log_softmax; softmax of ``scale * x`` over the first n columns of each row, n = min(row % queries + 1,
    cols) with a causal mask (``queries`` > 0), all of them otherwise, and 0 beyond."""
    numba_type = from_dtype(dtype)
    zero = dtype.type(0)

    @jit
    def kernel(x, out, log, scale, queries):
        buffer = cuda.shared.array(MAX_THREADS, numba_type)
        rows, cols = x.shape
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            n = min(row % queries + 1, cols) if queries > 0 else cols
            largest = row_max(buffer, x, row, scale, n)
            total = zero
            for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                e = math.exp(scale * x[row, j] - largest)
                if not log:
                    out[row, j] = e  # scaled below: each thread reads back only what it wrote
                total += e
            total = block_reduce(buffer, total, False)
            if log:
                lse = math.log(total)
                for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                    out[row, j] = (scale * x[row, j] - largest) - lse
            else:
                for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                    out[row, j] = out[row, j] / total
            for j in range(n + cuda.threadIdx.x, cols, cuda.blockDim.x):
                out[row, j] = zero

    return kernel


@cache
def backward_kernel(dtype: np.dtype):
    """The backward kernel for ``dtype``: ``kernel(grad, out, dx, log, scale, queries)``, ``out`` the
    forward's result with the same ``scale`` and ``queries``; 0 where masked."""
    numba_type = from_dtype(dtype)
    zero = dtype.type(0)

    @jit
    def kernel(grad, out, dx, log, scale, queries):
        buffer = cuda.shared.array(MAX_THREADS, numba_type)
        rows, cols = grad.shape
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            n = min(row % queries + 1, cols) if queries > 0 else cols
            total = zero
            for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                total += grad[row, j] if log else grad[row, j] * out[row, j]
            total = block_reduce(buffer, total, False)
            for j in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                if log:
                    dx[row, j] = grad[row, j] - math.exp(out[row, j]) * total
                else:
                    dx[row, j] = scale * out[row, j] * (grad[row, j] - total)
            for j in range(n + cuda.threadIdx.x, cols, cuda.blockDim.x):
                dx[row, j] = zero

    return kernel


def _check_rows(name: str, array: object):
    """``array`` as a C-contiguous 2-D float32/float64 CudaArray, after checking it is one."""
    array = check_array(name, array)
    if array.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, cols), got shape {tuple(array.shape)}")
    return array


def _result(out: object | None, like) -> object:
    """``out`` after checking it matches ``like`` (shape, dtype, C-contiguous), or a new device array."""
    return output(out, like.shape, like.dtype)


def _launch(kernel, rows: int, cols: int, *args) -> None:
    if rows and cols:
        launch(kernel, grid_size(rows, 1), threads_for(cols), args)


def _forward(x, out, log: bool, scale: float = 1.0, queries: int = 0):
    x = _check_rows("x", x)
    out = _result(out, x)
    dtype = np.dtype(x.dtype)
    _launch(forward_kernel(dtype), *x.shape, x, out, log, dtype.type(scale), queries)
    return out


def _backward(grad, out, log: bool, dx, scale: float = 1.0, queries: int = 0):
    out = _check_rows("out", out)
    grad = _check_rows("grad", grad)
    if grad.shape != out.shape or grad.dtype != out.dtype:
        raise ValueError(f"grad must have the shape {tuple(out.shape)} and dtype {out.dtype} of out, "
                         f"got {tuple(grad.shape)} {grad.dtype}")
    dx = _result(dx, out)
    dtype = np.dtype(out.dtype)
    _launch(backward_kernel(dtype), *out.shape, grad, out, dx, log, dtype.type(scale), queries)
    return dx


def softmax_forward(x, out=None, scale: float = 1.0, queries: int = 0):
    """softmax of each row of ``scale * x`` (rows, cols): ``exp(y - max) / sum(exp(y - max))``, x's dtype
    (written into ``out`` when given); with ``queries`` > 0, row r keeps only its first
    ``r % queries + 1`` columns (a causal mask over (L = queries, S = cols) matrices), the rest are 0."""
    return _forward(x, out, False, scale, queries)


def log_softmax_forward(x, out=None):
    """log_softmax of each row of ``x`` (rows, cols): ``(x - max) - log(sum(exp(x - max)))``, x's dtype."""
    return _forward(x, out, True)


def softmax_backward(grad, out, dx=None, scale: float = 1.0, queries: int = 0):
    """Gradient of :func:`softmax_forward` (same ``scale`` and ``queries``) given its result ``out``:
    ``scale * out * (grad - sum(grad * out))``, 0 where masked."""
    return _backward(grad, out, False, dx, scale, queries)


def log_softmax_backward(grad, out, dx=None):
    """Gradient of :func:`log_softmax_forward` given its result ``out``: ``grad - exp(out) * sum(grad)``."""
    return _backward(grad, out, True, dx)
