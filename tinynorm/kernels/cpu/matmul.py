"""Matrix products on numpy arrays: numpy's ``matmul``, with the large ones shared out among threads.

OpenBLAS runs a product of at least 2**18 multiply-adds on its own thread pool, and afterwards its idle
threads spin for a while (2**28 cycles unless ``OPENBLAS_THREAD_TIMEOUT`` was set before numpy was
loaded) on the cores that tinynorm's parallel Numba kernels want next: a GELU right after a GEMM ran
twice as long. So here, when BLAS has more than one thread, such a product is cut into one part per
thread, and each part runs on one Python thread with BLAS at one thread (``blas_pool.py``): OpenBLAS's
pool never wakes up, and a batched product makes one hand-off instead of one per matrix.

- A 2-D product is cut along the longer side of its result: bands of ``a``'s rows, or of ``b``'s
  columns (a linear layer's forward and both of its gradients).
- A batched product (attention's ``q @ k^T`` over batch x heads) is cut along its batch. The operands
  of attention are strided views (heads split out of the fused qkv projection), which no reshape turns
  into one GEMM without a copy.
- Python threads rather than a Numba ``prange``: the products stay in OpenBLAS (a GEMM written in Numba
  reaches about half its speed, see ``conv.py``), and Numba cannot call BLAS without SciPy.
- Smaller products, other dtypes than float32/float64, 1-D operands and one BLAS thread go to numpy
  unchanged: OpenBLAS runs the small ones on the calling thread itself.

Measured: docs/benchmarks.md, "Measurements behind the kernels' designs".
"""
from __future__ import annotations

import functools

import numpy as np

from . import blas_pool

# From this many multiply-adds per matrix OpenBLAS itself runs a product on several threads (its
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD); below, it makes no hand-offs and nothing spins.
SPLIT_MIN_MULTIPLY_ADDS = 1 << 18
_BLAS_DTYPES = (np.float32, np.float64)


def _bounds(size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering ``range(size)`` (parts <= size), as even as they come."""
    edges = [size * i // parts for i in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


def _threads() -> int:
    """BLAS's thread count (1 while a split runs elsewhere, or when BLAS cannot be controlled)."""
    controller = blas_pool.blas()
    return controller.get_num_threads() if controller else 1


def _matmul_2d(a: np.ndarray, b: np.ndarray, threads: int) -> np.ndarray:
    """``a @ b`` for 2-D ``a`` (m, k) and ``b`` (k, n), in bands of the result's longer side."""
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), a.dtype)
    if m >= n:
        parts = [functools.partial(np.matmul, a[lo:hi], b, out=out[lo:hi]) for lo, hi in _bounds(m, min(threads, m))]
    else:
        parts = [functools.partial(np.matmul, a, b[:, lo:hi], out=out[:, lo:hi])
                 for lo, hi in _bounds(n, min(threads, n))]
    blas_pool.run_split(parts)
    return out


def _matmul_batched(a: np.ndarray, b: np.ndarray, threads: int) -> np.ndarray:
    """``np.matmul(a, b)`` for batched operands, in slices along the first batch axis longer than 1."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return np.matmul(a, b)  # numpy's own error
    axis = next((i for i, size in enumerate(batch) if size > 1), None)
    if axis is None:
        return np.matmul(a, b)
    a, b = np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n))
    out = np.empty(batch + (m, n), a.dtype)
    slices = [(slice(None),) * axis + (slice(lo, hi),) for lo, hi in _bounds(batch[axis], min(threads, batch[axis]))]
    blas_pool.run_split([functools.partial(np.matmul, a[s], b[s], out=out[s]) for s in slices])
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)``, a large product shared out among BLAS's threads (module docstring)."""
    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.dtype not in _BLAS_DTYPES:
        return np.matmul(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.shape[-2] != k or m * n * k < SPLIT_MIN_MULTIPLY_ADDS:
        return np.matmul(a, b)  # also numpy's own errors
    threads = _threads()
    if threads < 2:
        return np.matmul(a, b)
    if a.ndim == b.ndim == 2:
        return _matmul_2d(a, b, threads)
    return _matmul_batched(a, b, threads)

