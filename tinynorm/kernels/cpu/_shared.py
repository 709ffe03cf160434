"""Helpers shared by the normalization kernels: input checks for the Python wrappers, and the
row statistics every kernel computes.

The wrappers check their arrays before calling a kernel, so a bad argument gives a clear
``TypeError``/``ValueError`` instead of a Numba typing error, and they hand the kernels C-contiguous
arrays of one dtype so each kernel compiles once per dtype. ``eps`` is checked by
:func:`tinynorm._checks.check_eps`, the rule every normalization shares.

Two layers check, each its own contract, once: :mod:`tinynorm.ops.normalization` checks a call on
tensors (PyTorch's arguments and errors: normalized_shape, groups, parameter shapes, dtypes and
devices, values per channel) for every layer and function; the wrappers check only the array
contract (type, dtype, rank, matching shapes). They keep that guard because they are public
(docs/normalization.md: plain functions on arrays to call on their own, as the tests and benchmarks
do), and a kernel given mismatched shapes would read past an array's end, not raise.

Statistics are computed in the data's dtype, which is fast and, thanks to the two-pass formulas,
accurate when |mean| >> std; but float32 squares overflow above |x| ~ 1.8e19 and underflow below
~1e-19. The fast loops count the rows whose variance went out of range (:func:`out_of_range`, one
comparison per row); when there are some, a second pass redoes them from :func:`rescaled_mean_var`,
in float64 on the row scaled by a power of two, so every finite input is normalized right. The plain
numpy versions of every formula are in :mod:`tinynorm.kernels.reference`.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit

from . import _config
from ._config import IEEE_JIT_OPTIONS, JIT_OPTIONS

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

# Per-thread partial sums are padded to whole 64-byte cache lines so that two threads never write to
# the same line: false sharing slows the narrow backward down severalfold (measured: docs/benchmarks.md).
CACHE_LINE_BYTES = 64


def check_input(name: str, array: object, ndim: int, axes: str) -> np.ndarray:
    """Return ``array`` as a C-contiguous float32/float64 array after checking its type and ndim."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {axes}, got shape {array.shape}")
    return np.ascontiguousarray(array)


def check_like(name: str, array: object, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Return ``array`` as a C-contiguous array after checking it has this exact shape and dtype."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype} (the dtype of x), got {array.dtype}")
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    return np.ascontiguousarray(array)


def param_or_fill(name: str, param: np.ndarray | None, size: int, dtype: np.dtype, fill: float) -> np.ndarray:
    """Check an affine parameter of shape ``(size,)``; ``None`` becomes an array of ``fill``.

    Filling ``weight=None`` with ones and ``bias=None`` with zeros keeps one compiled kernel per dtype
    (instead of one per None-combination) for the price of a small array the size of one row.
    """
    if param is None:
        return np.full(size, fill, dtype=dtype)
    return check_like(name, param, (size,), dtype)


def output(out: np.ndarray | None, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Return ``out`` after checking it can receive the result, or a new array when it is None."""
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f"out must have shape {shape} and dtype {dtype}, got {out.shape} {out.dtype}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writeable C-contiguous array")
    return out


def use_parallel(size: int) -> bool:
    """Whether ``size`` elements are enough work to pay for starting the parallel threads."""
    return size >= _config.PARALLEL_THRESHOLD and numba.get_num_threads() > 1


def num_chunks(units: int) -> int:
    """How many fixed chunks to split ``units`` of work into: one per thread (at most one per unit).

    Each chunk writes its own partial sums, later added in chunk order, so a result depends only on
    the input and the thread count, never on thread timing.
    """
    return max(1, min(units, numba.get_num_threads()))


def partials(chunks: int, width: int, dtype: np.dtype) -> np.ndarray:
    """Zeroed ``(chunks, padded width)`` buffer, each row padded to whole cache lines."""
    per_line = CACHE_LINE_BYTES // dtype.itemsize
    padded = -(-width // per_line) * per_line
    return np.zeros((chunks, padded), dtype=dtype)


# One explicit signature: a ``prange`` index is unsigned, and the bounds must stay int64 whoever calls.
@njit("UniTuple(int64, 2)(int64, int64, int64)", **JIT_OPTIONS)
def chunk_bounds(chunk, chunks, units):
    """The ``[start, stop)`` range of ``units`` that belongs to ``chunk`` out of ``chunks``."""
    return chunk * units // chunks, (chunk + 1) * units // chunks


@njit(**JIT_OPTIONS)
def total(v):
    """Sum of the 1-D array ``v``, in ``v``'s dtype."""
    result = v.dtype.type(0)
    for i in range(v.size):
        result += v[i]
    return result


@njit(**JIT_OPTIONS)
def mean_var_from_total(v, v_total):
    """Mean and biased variance of the 1-D array ``v`` whose sum ``v_total`` is already known.

    Corrected two-pass algorithm: a first mean ``m = v_total / n``, then sums of ``d = v - m`` and
    ``d²``; ``sum(d)`` fixes the rounding error of ``m``. There is no ``E[x²] - E[x]²`` cancellation,
    so it stays accurate even when |mean| >> std.
    """
    n = v.dtype.type(v.size)  # a float of v's dtype: an integer would promote float32 math to float64
    first_mean = v_total / n
    sum_d = v.dtype.type(0)
    sum_d2 = v.dtype.type(0)
    for i in range(v.size):
        d = v[i] - first_mean
        sum_d += d
        sum_d2 += d * d
    mean_d = sum_d / n
    var = max(sum_d2 / n - mean_d * mean_d, v.dtype.type(0))
    return first_mean + mean_d, var


@njit(**JIT_OPTIONS)
def mean_var(v):
    """Mean and biased variance of the 1-D array ``v``: :func:`mean_var_from_total` after a sum."""
    return mean_var_from_total(v, total(v))


def ieee_quietly() -> np.errstate:
    """numpy arithmetic on statistics without warnings: inf and NaN results are the IEEE answers the
    kernels give too (and PyTorch gives silently)."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


# Below tiny / eps of the dtype (~1e-31 in float32: values within ~1e-16 of their mean) squares may have
# underflowed. Computed once: np.finfo costs microseconds a call.
_SMALL_VARIANCE = {dtype: float(np.finfo(dtype).tiny / np.finfo(dtype).eps) for dtype in FLOAT_DTYPES}


def variance_floor(dtype: np.dtype, eps: float) -> float:
    """The smallest variance (or mean square) a kernel trusts in ``dtype``: below it, squares lost to
    underflow matter, unless ``eps`` is larger and hides the variance anyway (then the floor is 0)."""
    small = _SMALL_VARIANCE[dtype]
    return small if eps < small else 0.0


@njit(**JIT_OPTIONS)
def out_of_range(var, floor):
    """Whether a variance computed in the data's dtype cannot be trusted: NaN, overflowed to inf (float32
    squares of |x| above ~1.8e19), or below :func:`variance_floor`. The kernels count such rows in
    their fast loop, and only when there are some run a second kernel that redoes them rescaled."""
    return not floor <= var < np.inf


@njit(**JIT_OPTIONS)
def rescaled_mean_var(v):
    """Mean and biased variance of the 1-D array ``v``, in float64, of ``v * 2**-e``.

    ``2**e`` is just above ``max |v|``, so the scaled values lie in (-1, 1) and their squares neither
    overflow nor underflow (scaling by a power of two is exact). Returns ``(e, mean_s, var_s)``: the
    statistics of ``v`` are ``mean_s * 2**e`` and ``var_s * 4**e`` (RMSNorm's mean square is
    ``(var_s + mean_s²) * 4**e``), and ``rstd = rstd_s * 2**-e`` with ``rstd_s`` from
    :func:`rescaled_rstd`. A row holding inf or NaN keeps ``e = 0`` and gives NaN statistics.
    """
    largest = 0.0
    for i in range(v.size):
        largest = max(largest, abs(float(v[i])))
    e = math.frexp(largest)[1] if 0.0 < largest < np.inf else 0
    n = float(v.size)
    first_mean = 0.0
    for i in range(v.size):
        first_mean += math.ldexp(float(v[i]), -e)
    first_mean /= n
    sum_d = 0.0
    sum_d2 = 0.0
    for i in range(v.size):
        d = math.ldexp(float(v[i]), -e) - first_mean
        sum_d += d
        sum_d2 += d * d
    mean_d = sum_d / n
    return e, first_mean + mean_d, max(sum_d2 / n - mean_d * mean_d, 0.0)


@njit(**IEEE_JIT_OPTIONS)
def rescaled_rstd(e, var_s, eps):
    """``rstd_s = 1 / sqrt(var_s + eps * 4**-e)``, the scaled rstd of :func:`rescaled_mean_var`."""
    return 1.0 / math.sqrt(var_s + math.ldexp(float(eps), -2 * e))
