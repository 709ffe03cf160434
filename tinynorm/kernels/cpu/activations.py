"""Elementwise functions numpy lacks: the error function, and the constants of GELU.

GELU(x) = x * Phi(x), Phi the standard normal CDF: ``approximate='none'`` uses
Phi(x) = (1 + erf(x / sqrt 2)) / 2; ``'tanh'`` uses 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
as in GPT-2 and PyTorch. The CPU kernels are in ``gelu.py``; the CUDA backend computes the same formulas
in one fused kernel each (``tinynorm.kernels.cuda.elementwise.gelu_functions``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._shared import FLOAT_DTYPES, chunk_bounds, num_chunks, use_parallel


@njit(cache=True, fastmath=FASTMATH)
def _erf_range(x, out, start, stop):  # type: ignore[no-untyped-def]
    for i in range(start, stop):
        out[i] = math.erf(x[i])


# math.erf is a scalar libm call (~10 ns an element here, the same through libm's erff or scipy) that
# LLVM cannot vectorize, so threads are the one way to speed it up while keeping its exact results.
@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _erf_parallel(x, out, chunks):  # type: ignore[no-untyped-def]
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.size)
        _erf_range(x, out, start, stop)


def erf(x: np.ndarray) -> np.ndarray:
    """erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise, in x's float dtype.

    A plain ``@njit`` loop rather than ``@vectorize``: it compiles on first use and is cached on disk,
    where an eager ``@vectorize`` signature recompiled at every import of tinynorm (~2.5 s).
    """
    if not isinstance(x, np.ndarray) or x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"x must be a float32 or float64 numpy.ndarray, got {getattr(x, 'dtype', type(x).__name__)}")
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    if use_parallel(x.size):
        _erf_parallel(flat_x, flat_out, num_chunks(x.size))
    else:
        _erf_range(flat_x, flat_out, 0, x.size)
    return out


SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
INV_SQRT_2 = 1 / math.sqrt(2)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
TANH_CUBIC = 0.044715  # the cubic term of the tanh approximation (Hendrycks & Gimpel 2016)
