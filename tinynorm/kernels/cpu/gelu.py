"""GELU and its derivative, each one fused pass over the data.

GELU(x) = x * Phi(x), Phi the standard normal CDF, and GELU'(x) = Phi(x) + x * phi(x), phi its density.
``approximate='tanh'`` uses 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) for Phi (GPT-2, PyTorch).

float32 data, ``approximate='none'``: libm's erf is a scalar call that LLVM cannot vectorize (~10 ns an
element: 20% of a TinyTransformerLM d128 training step). So Phi comes from the Chebyshev-fitted
complementary error function of Numerical Recipes (Press et al., 6.2),
``erfc(z) = t * exp(-z^2 + P(t))``, ``t = 1 / (1 + z/2)``, ``P`` of degree 9, whose relative error is
below 1.2e-7 for every ``z >= 0``, in float32 arithmetic that LLVM vectorizes. The exponent keeps its
bits: ``x^2`` is split into its rounded value and that rounding's error (an fma, ``_fma.py``), and
``P`` and the error join ``exp``'s argument after its range reduction (``_exp.exp_of_sum_float32``).
GELU(x) is then within 5e-7 relative of the exact value in both tails (at most 4.6e-7 measured, on
every float32 in [-4, -2] among others: about 4 ulps), closer than PyTorch's float32 GELU (which has
1e-3 relative error near x = -5), at ~1 ns an element forward (one exp) and ~1.5 ns backward (two) on
one core, 1.6x faster than the same formula in float64. Beyond ``|x| = 15`` Phi is 0 or 1 in float32:
x is clamped there.
float64 data uses libm's erfc: exact to the last bits.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._exp import exp_of_sum_float32
from ._fma import fused_multiply_add
from ._shared import FLOAT_DTYPES, chunk_bounds, num_chunks, use_parallel
from .activations import INV_SQRT_2, INV_SQRT_2PI, SQRT_2_OVER_PI, TANH_CUBIC

APPROXIMATIONS = ("none", "tanh")


# ------------------------------------------------------------ float32: Phi without a libm call
CLAMP = np.float32(15.0)  # Phi(-15) = 4e-51 and phi(15) = 5e-50 are 0 in float32
ERFC_COEFFICIENTS = tuple(np.float32(c) for c in (  # P(t), highest power first (Numerical Recipes 6.2)
    0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
    1.00002368, -1.26551223))


@njit(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
def _minus_half_square(x):
    """``(high, low)`` with ``high + low = -x^2 / 2`` exactly; compiled without ``reassoc``, under which
    LLVM could take the fma's ``x * x - fl(x * x)`` for 0."""
    square = x * x
    return np.float32(-0.5) * square, np.float32(-0.5) * fused_multiply_add(x, x, -square)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _erfc_parts(x):
    """``(t, high, low, low + P(t), nan_or_zero)`` for float32 x clamped to [-CLAMP, CLAMP], z = |x| /
    sqrt(2): ``Phi(-|x|) = t / 2 * exp(high + low + P)`` with ``high + low = -x^2 / 2`` exactly;
    ``nan_or_zero`` is NaN for an infinite or NaN x, else 0, to add where PyTorch's ``x * phi(x)``
    would be ``inf * 0``."""
    xc = min(max(x, -CLAMP), CLAMP)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.5 * INV_SQRT_2) * abs(xc))
    c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 = ERFC_COEFFICIENTS
    p = ((((((((c0 * t + c1) * t + c2) * t + c3) * t + c4) * t + c5) * t + c6) * t + c7) * t + c8) * t + c9
    high, low = _minus_half_square(xc)
    return t, high, low, low + p, (x - xc) * np.float32(0.0)


# error_model="numpy": a float division without Python's ZeroDivisionError check, which keeps LLVM from
# vectorizing the loop (measured: docs/benchmarks.md). Where Phi(x) is tiny (x < 0) the products with x
# go into exp's factor, so that no result in float32's normal range passes through a subnormal.
@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _forward_fast(x, y, start, stop):
    x, y = x[start:stop], y[start:stop]  # indices from 0: provably in bounds, so LLVM loads vectors
    for i in range(x.size):
        xi = x[i]
        t, high, _, low_p, nan_or_zero = _erfc_parts(xi)
        negative = xi < 0
        tail = exp_of_sum_float32(high, low_p, np.float32(0.5) * t * (xi if negative else np.float32(1.0)))
        tail += nan_or_zero if negative else np.float32(0.0)  # -inf * Phi(-inf) is NaN
        # x Phi(x) = x Phi(-|x|) (-0.0 where it underflows, as x * 0), or x (1 - Phi(-x))
        y[i] = math.copysign(tail, xi) if negative else xi * (np.float32(1.0) - tail)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _backward_fast(grad, x, dx, start, stop):
    grad, x, dx = grad[start:stop], x[start:stop], dx[start:stop]
    for i in range(x.size):
        xi = x[i]
        t, high, low, low_p, nan_or_zero = _erfc_parts(xi)
        half_erfc = exp_of_sum_float32(high, low_p, np.float32(0.5) * t)  # Phi(-|x|)
        cdf = np.float32(1.0) - half_erfc if xi >= 0 else half_erfc
        x_pdf = exp_of_sum_float32(high, low, np.float32(INV_SQRT_2PI) * xi) + nan_or_zero  # x phi(x)
        dx[i] = grad[i] * (cdf + x_pdf)


# ------------------------------------------------------------ exact float64, and the tanh form
@njit(cache=True, fastmath=FASTMATH)
def _forward_exact(x, y, start, stop):
    x, y = x[start:stop], y[start:stop]
    for i in range(x.size):
        y[i] = x[i] * 0.5 * math.erfc(-x[i] * INV_SQRT_2)


@njit(cache=True, fastmath=FASTMATH)
def _backward_exact(grad, x, dx, start, stop):
    grad, x, dx = grad[start:stop], x[start:stop], dx[start:stop]
    for i in range(x.size):
        xi = x[i]
        cdf = 0.5 * math.erfc(-xi * INV_SQRT_2)
        dx[i] = grad[i] * (cdf + xi * INV_SQRT_2PI * math.exp(-0.5 * xi * xi))


@njit(cache=True, fastmath=FASTMATH)
def _forward_tanh(x, y, start, stop):
    x, y = x[start:stop], y[start:stop]
    for i in range(x.size):
        xi = x[i]
        y[i] = 0.5 * xi * (1 + math.tanh(SQRT_2_OVER_PI * (xi + TANH_CUBIC * xi * xi * xi)))


@njit(cache=True, fastmath=FASTMATH)
def _backward_tanh(grad, x, dx, start, stop):
    grad, x, dx = grad[start:stop], x[start:stop], dx[start:stop]
    for i in range(x.size):
        xi = x[i]
        t = math.tanh(SQRT_2_OVER_PI * (xi + TANH_CUBIC * xi * xi * xi))
        d_inner = SQRT_2_OVER_PI * (1 + 3 * TANH_CUBIC * xi * xi)
        dx[i] = grad[i] * (0.5 * (1 + t) + 0.5 * xi * (1 - t * t) * d_inner)


# ------------------------------------------------------------ parallel drivers and the wrappers
# The kernels are chosen by number: a kernel passed to a driver as an argument is part of the driver's
# type, which Numba cannot cache, so the driver would be compiled afresh in every process.
FAST, EXACT, TANH = 0, 1, 2


@njit(cache=True, fastmath=FASTMATH)
def _forward_range(form, x, y, start, stop):
    if form == FAST:
        _forward_fast(x, y, start, stop)
    elif form == EXACT:
        _forward_exact(x, y, start, stop)
    else:
        _forward_tanh(x, y, start, stop)


@njit(cache=True, fastmath=FASTMATH)
def _backward_range(form, grad, x, dx, start, stop):
    if form == FAST:
        _backward_fast(grad, x, dx, start, stop)
    elif form == EXACT:
        _backward_exact(grad, x, dx, start, stop)
    else:
        _backward_tanh(grad, x, dx, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _forward_parallel(form, x, y, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.size)
        _forward_range(form, x, y, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _backward_parallel(form, grad, x, dx, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.size)
        _backward_range(form, grad, x, dx, start, stop)


def _form(x: np.ndarray, approximate: str) -> int:
    """Which kernel computes GELU for ``x``'s dtype and ``approximate``."""
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return TANH if approximate == "tanh" else FAST if x.dtype == np.float32 else EXACT


def _flat_input(name: str, x: np.ndarray) -> np.ndarray:
    """``x`` as the kernels take it: a C-contiguous float32/float64 array, float16 computed in float32."""
    if not isinstance(x, np.ndarray) or x.dtype not in FLOAT_DTYPES + (np.float16,):
        raise TypeError(f"{name} must be a float16, float32 or float64 numpy.ndarray, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    return np.ascontiguousarray(x, dtype=np.float32 if x.dtype == np.float16 else x.dtype)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU(x) = x * Phi(x) elementwise, in x's dtype (see the module docstring for ``approximate``)."""
    data = _flat_input("x", x)
    form = _form(data, approximate)
    y = np.empty_like(data)
    flat_x, flat_y = data.reshape(-1), y.reshape(-1)
    if use_parallel(data.size):
        _forward_parallel(form, flat_x, flat_y, num_chunks(data.size))
    else:
        _forward_range(form, flat_x, flat_y, 0, data.size)
    return y.astype(x.dtype, copy=False)


def gelu_backward(grad: np.ndarray, x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``grad * GELU'(x)``, ``GELU'(x) = Phi(x) + x * phi(x)`` (for ``'tanh'``, the approximation's derivative)."""
    data = _flat_input("x", x)
    upstream = _flat_input("grad", grad).astype(data.dtype, copy=False)
    if upstream.shape != data.shape:
        raise ValueError(f"grad must have x's shape {data.shape}, got {upstream.shape}")
    form = _form(data, approximate)
    dx = np.empty_like(data)
    flat = (upstream.reshape(-1), data.reshape(-1), dx.reshape(-1))
    if use_parallel(data.size):
        _backward_parallel(form, *flat, num_chunks(data.size))
    else:
        _backward_range(form, *flat, 0, data.size)
    return dx.astype(x.dtype, copy=False)
