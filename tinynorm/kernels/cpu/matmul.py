"""Batched matrix products on numpy arrays: numpy's ``matmul``, with the batch shared out among threads.

numpy runs a batched product (attention's ``q @ k^T`` over batch x heads) as one BLAS call per matrix.
With several BLAS threads each of those small calls hands its work to OpenBLAS's thread pool and back,
and the idle threads spin between calls; so here, when BLAS has more than one thread, the batch is cut
into one slice per thread and each slice runs on one Python thread with BLAS at one thread
(``blas_pool.py``): one hand-off per product instead of one per matrix.

Design, chosen by measurement (the numbers: docs/benchmarks.md, "Measurements behind the kernels'
designs"):

- Slices rather than one GEMM over a reshaped operand: the operands of attention are strided views
  (heads split out of the fused qkv projection), which no reshape turns into one GEMM without a copy.
- The split saves most when other processes load the cores (each hand-off then waits to be scheduled)
  and is about even with numpy's loop when the cores are free.
- Python threads rather than a Numba ``prange``: the products stay in OpenBLAS (a GEMM written in Numba
  reaches about half its speed, see ``conv.py``), and Numba cannot call BLAS without SciPy.
- Only matrices at or above OpenBLAS's own threading threshold (m*n*k >= 2**18 multiply-adds each) are
  split: below it OpenBLAS runs each matrix on one thread, numpy's loop hands nothing off, and splitting
  the d64 Transformer's small products gained nothing measurable. Other dtypes than float32/float64,
  1-D operands and one BLAS thread go to numpy unchanged.
"""
from __future__ import annotations

import functools

import numpy as np

from . import blas_pool

# Below this many multiply-adds per matrix OpenBLAS itself runs a product on one thread (its
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD), so numpy's loop over the batch makes no hand-offs.
SPLIT_MIN_MULTIPLY_ADDS = 1 << 18
_BLAS_DTYPES = (np.float32, np.float64)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)``, with a large enough batch shared out among BLAS's threads (module docstring)."""
    if a.ndim < 2 or b.ndim < 2 or max(a.ndim, b.ndim) < 3 or a.dtype != b.dtype or a.dtype not in _BLAS_DTYPES:
        return np.matmul(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    controller = blas_pool.blas()
    if b.shape[-2] != k or m * n * k < SPLIT_MIN_MULTIPLY_ADDS or not controller:
        return np.matmul(a, b)  # also numpy's own errors
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return np.matmul(a, b)  # numpy's own error
    axis = next((i for i, size in enumerate(batch) if size > 1), None)
    threads = controller.get_num_threads()  # 1 while a split runs elsewhere
    if axis is None or threads < 2:
        return np.matmul(a, b)
    a, b = np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n))
    out = np.empty(batch + (m, n), a.dtype)
    bounds = np.linspace(0, batch[axis], min(threads, batch[axis]) + 1).astype(int)
    slices = [(slice(None),) * axis + (slice(lo, hi),) for lo, hi in zip(bounds[:-1], bounds[1:])]
    blas_pool.run_split([functools.partial(np.matmul, a[s], b[s], out=out[s]) for s in slices])
    return out
