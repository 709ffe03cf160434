"""Softmax cross-entropy over the rows of a 2-D array of logits, forward and backward, on the CPU.

With ``C`` classes, label smoothing ``s`` and ``z = x - max(x)`` (a row shifted by its maximum, so no
``exp`` overflows), a row's log-probabilities are ``z - log(sum(exp(z)))`` and its loss against the
target distribution ``(1 - s) * onehot(y) + s / C`` is

    loss = log(sum(exp(z))) - (1 - s) * z[y] - (s / C) * sum(z)

The forward returns each row's loss (0 for a row whose target is ``ignore_index``) and its
log-sum-exp ``lse = max(x) + log(sum(exp(z)))``, which is all the backward needs: a row's gradient is
``softmax(x) - target distribution = exp(x - lse) - (1 - s) * onehot(y) - s / C``, times the row's
upstream gradient. One number per row is kept between the two passes, where PyTorch's
``log_softmax`` + ``nll_loss`` keeps the (rows, C) log-probabilities.

The numpy forms (:func:`cross_entropy_forward_numpy`, :func:`cross_entropy_backward_numpy`) are the
reference, for reading and for :mod:`tinynorm.kernels.cuda.cross_entropy`, which computes the same in
one GPU kernel each way. The CPU runs compiled loops over the rows that follow them operation by
operation in the logits' dtype, without a dozen numpy calls' overhead on the small batches of a
classifier (measured: docs/benchmarks.md). They round differently: their sums are reassociated
(vectorized) where numpy sums pairwise, their exp is :func:`._exp.exp_nonpositive` (within about a
rounding; 0 below its lowest argument, where float64 would still have subnormals) except in rows whose
maximum is NaN or infinite, which take Numba's libm exp, and log is libm's.

Targets must be in ``[0, C)`` or equal to ``ignore_index``: these functions raise an ``IndexError``
on others (``ops.losses`` checks them first for both devices; the CUDA kernels treat them as ignored).
"""
from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np
from numba import njit

from ..._checks import check_number
from ._config import FASTMATH
from ._exp import exp_nonpositive
from .index_count import count_indices
from ._row_max import finite_max
from ._shared import FLOAT_DTYPES
from ._vector_width import wide_vectors


def check_arguments(logits: Any, target: Any, label_smoothing: float) -> None:
    """Check the arguments both devices' forward and backward take (shapes and dtypes only, so the CUDA
    wrappers share it): logits (rows, C) float32/float64, target (rows,) integers, s in [0, 1]."""
    if np.dtype(logits.dtype) not in FLOAT_DTYPES:
        raise TypeError(f"logits must have dtype float32 or float64, got {logits.dtype}")
    if logits.ndim != 2 or logits.shape[1] == 0:
        raise ValueError("logits must be 2-D (rows, classes) with at least one class, "
                         f"got shape {tuple(logits.shape)}")
    if np.dtype(target.dtype).kind not in "iu":
        raise TypeError(f"target must hold integer class indices, got dtype {target.dtype}")
    if tuple(target.shape) != logits.shape[:1]:
        raise ValueError(f"target must have shape {logits.shape[:1]} (one class per row of logits), "
                         f"got {tuple(target.shape)}")
    if not 0.0 <= check_number(None, "label_smoothing", label_smoothing) <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing!r}")


def check_row_values(name: str, values: Any, logits: Any, single: bool = False) -> None:
    """``values`` (lse, or the upstream gradient) has logits' dtype and one entry per row of logits (or,
    with ``single``, one entry for all rows)."""
    rows = logits.shape[:1]
    if np.dtype(values.dtype) != np.dtype(logits.dtype) or (
            tuple(values.shape) != rows and not (single and values.size == 1)):
        expected = f"shape {rows}" + (" or a single value" if single else "")
        raise ValueError(f"{name} must have {expected} and dtype {logits.dtype} (one value per row of logits), "
                         f"got {tuple(values.shape)} {values.dtype}")


def _ignored_value(target: np.ndarray, ignore_index: Any) -> tuple[Any, bool]:
    """``ignore_index`` in the targets' dtype, and whether any target can equal it: the compiled loops
    compare like with like (a uint64 against an int64 would be compared in float64)."""
    try:
        value = operator.index(ignore_index)
    except TypeError:
        if ignore_index is None:  # numpy's ``target != None``: nothing is ignored
            return target.dtype.type(0), False
        raise TypeError(f"ignore_index must be an int or None, got {ignore_index!r}") from None
    lowest, highest = _limits(target.dtype)
    if lowest <= value <= highest:
        return target.dtype.type(value), True
    return target.dtype.type(0), False


@functools.cache
def _limits(dtype: np.dtype) -> tuple[int, int]:
    """The least and the greatest value of an integer dtype (``np.iinfo`` takes microseconds a call)."""
    limits = np.iinfo(dtype)
    return int(limits.min), int(limits.max)


def _check_targets(target: np.ndarray, classes: int, ignore_index: Any) -> tuple[Any, bool]:
    """Every target a class index in [0, classes) or ``ignore_index``, as PyTorch's IndexError says
    (numpy's indexing would wrap a negative one, such as -3, to a class from the end); returns
    :func:`_ignored_value`'s pair for the loops."""
    ignored, ignoring = _ignored_value(target, ignore_index)
    outside, _ = count_indices(target, classes, ignore_index if ignoring else None)
    if outside:  # the first offender, for the message
        counted = target[target != ignored] if ignoring else target
        bad = counted[(counted < 0) | (counted >= classes)][0]
        raise IndexError(f"target {bad} is out of bounds: class indices must be in [0, {classes}) "
                         f"or ignore_index={ignore_index}")
    return ignored, ignoring


def _as_ndarray(name: str, array: object) -> np.ndarray:
    """``array`` after checking it is an ndarray; a numpy scalar (what arithmetic on 0-d arrays returns,
    such as the upstream gradient of ``loss * 0.5``) becomes a 0-d array."""
    if isinstance(array, np.generic):
        return np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    return array


def cross_entropy_forward_numpy(logits: np.ndarray, target: np.ndarray, ignore_index: int,
                                label_smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """The forward pass in numpy, on checked arguments: the reference the compiled rows follow."""
    row_max = logits.max(axis=1, keepdims=True)
    z = logits - row_max
    log_total = np.log(np.exp(z).sum(axis=1))
    kept = target != ignore_index
    picked = np.take_along_axis(z, np.where(kept, target, 0)[:, None], axis=1)[:, 0]
    losses = log_total - (1 - label_smoothing) * picked
    if label_smoothing:  # skipped at s = 0: 0 * sum(z) would be NaN for a row with a -inf logit
        losses -= label_smoothing / logits.shape[1] * z.sum(axis=1)
    return np.where(kept, losses, 0).astype(logits.dtype, copy=False), row_max[:, 0] + log_total


def cross_entropy_backward_numpy(grad: np.ndarray, logits: np.ndarray, lse: np.ndarray, target: np.ndarray,
                                 ignore_index: int, label_smoothing: float, grad_scale: float) -> np.ndarray:
    """The backward pass in numpy, on checked arguments: the reference the compiled rows follow."""
    rows, classes = logits.shape
    dlogits = np.exp(logits - lse[:, None])
    dlogits -= label_smoothing / classes
    kept = target != ignore_index
    dlogits[np.arange(rows)[kept], target[kept]] -= 1 - label_smoothing
    dlogits *= grad.astype(logits.dtype).reshape(-1, 1) * logits.dtype.type(grad_scale)  # (rows, 1) or (1, 1)
    dlogits[~kept] = 0
    return dlogits


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _max_or_nan(row):
    """The largest entry of ``row``, NaN if there is one (numpy's max), in two vectorized loops (the
    NaNs counted in the row's dtype: integer lanes would halve the vectors' width)."""
    wide_vectors()
    zero, one = row.dtype.type(0), row.dtype.type(1)
    nans = zero
    for j in range(row.size):
        nans += zero if row[j] == row[j] else one
    return row.dtype.type(np.nan) if nans else finite_max(row, row.size)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _shifted_sum(row, shift):
    """sum(row - shift) in the row's dtype, reassociated (a vectorized loop)."""
    wide_vectors()
    total = row.dtype.type(0)
    for j in range(row.size):
        total += row[j] - shift
    return total


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _exp_sum(row, shift):
    """sum(exp(row - shift)) in the row's dtype, for shift >= max(row). A finite shift takes
    :func:`._exp.exp_nonpositive` (a vectorized loop, the sum reassociated); NaN or an infinity numpy's
    exp, as numpy would."""
    wide_vectors()
    total = row.dtype.type(0)
    if -np.inf < shift < np.inf:
        for j in range(row.size):
            total += exp_nonpositive(row[j] - shift)
    else:
        for j in range(row.size):
            total += np.exp(row[j] - shift)
    return total


@njit(cache=True, error_model="numpy", nogil=True)
def _forward_rows(logits, target, ignored, ignoring, keep, spread, smoothed, losses, lse):
    """Each row as :func:`cross_entropy_forward_numpy` computes it, in the logits' dtype: ``keep`` is
    1 - s and ``spread`` s / C, both in that dtype (numpy's float32 arithmetic on a Python float);
    ``smoothed``: s is not 0."""
    wide_vectors()
    zero = logits.dtype.type(0)
    for r in range(logits.shape[0]):
        row = logits[r]
        largest = _max_or_nan(row)
        log_total = np.log(_exp_sum(row, largest))
        lse[r] = largest + log_total
        t = target[r]
        if ignoring and t == ignored:
            losses[r] = zero
            continue
        loss = log_total - keep * (row[t] - largest)
        if smoothed:  # skipped at s = 0, as in numpy's form
            loss -= spread * _shifted_sum(row, largest)
        losses[r] = loss


@njit(cache=True, error_model="numpy", nogil=True)
def _backward_rows(grad, logits, lse, target, ignored, ignoring, keep, spread, scale, dlogits):
    """Each row as :func:`cross_entropy_backward_numpy` computes it; ``grad`` holds one value per row
    or one for all, ``keep``, ``spread`` and ``scale`` are in the logits' dtype. The vectorized exp
    needs ``lse`` >= the row's entries, which the forward's is; a row where it is not (or a NaN one)
    is redone with numpy's."""
    wide_vectors()
    rows = logits.shape[0]
    for r in range(rows):
        out = dlogits[r]
        t = target[r]
        if ignoring and t == ignored:
            out[:] = 0
            continue
        row, shift = logits[r], lse[r]
        factor = grad[r if grad.size == rows else 0] * scale
        if not _shifted_exp_row(row, shift, spread, factor, out):
            out[t] = ((exp_nonpositive(row[t] - shift) - spread) - keep) * factor
            continue
        for j in range(row.size):
            out[j] = (np.exp(row[j] - shift) - spread) * factor
        out[t] = ((np.exp(row[t] - shift) - spread) - keep) * factor


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _shifted_exp_row(row, shift, spread, factor, out):
    """``out = (exp(row - shift) - spread) * factor`` in a vectorized loop; returns how many entries
    minus ``shift`` were above 0 or NaN, which that exp does not take (0 for the forward's shift; an
    infinite shift gives -inf, whose exp is 0, or NaN)."""
    wide_vectors()
    zero, one = row.dtype.type(0), row.dtype.type(1)
    outside = zero  # counted in the row's dtype: integer lanes would halve the vectors' width
    for j in range(row.size):
        v = row[j] - shift
        outside += zero if v <= 0 else one
        out[j] = (exp_nonpositive(v) - spread) * factor
    return outside


def _smoothing_scalars(logits: np.ndarray, label_smoothing: float) -> tuple[Any, Any]:
    """``1 - s`` and ``s / C`` in the logits' dtype, as numpy casts a Python float meeting the array."""
    dtype = logits.dtype.type
    return dtype(1 - label_smoothing), dtype(label_smoothing / logits.shape[1])


def _loops_take(logits: np.ndarray) -> bool:
    """Whether the compiled rows take these logits (a plain float32/float64 ndarray; subclasses keep
    numpy's handling)."""
    return type(logits) is np.ndarray and logits.dtype in FLOAT_DTYPES


def cross_entropy_forward(logits: np.ndarray, target: np.ndarray, ignore_index: int = -100,
                          label_smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Each row's loss (rows,) and log-sum-exp (rows,), in logits' dtype; ignored rows have loss 0."""
    logits, target = _as_ndarray("logits", logits), _as_ndarray("target", target)
    check_arguments(logits, target, label_smoothing)
    ignored, ignoring = _check_targets(target, logits.shape[1], ignore_index)
    if not _loops_take(logits):
        return cross_entropy_forward_numpy(logits, target, ignore_index, label_smoothing)
    losses, lse = np.empty(logits.shape[0], logits.dtype), np.empty(logits.shape[0], logits.dtype)
    _forward_rows(logits, target, ignored, ignoring, *_smoothing_scalars(logits, label_smoothing),
                  bool(label_smoothing), losses, lse)
    return losses, lse


def cross_entropy_backward(grad: np.ndarray, logits: np.ndarray, lse: np.ndarray, target: np.ndarray,
                           ignore_index: int = -100, label_smoothing: float = 0.0,
                           grad_scale: float = 1.0) -> np.ndarray:
    """The gradient w.r.t. logits given the upstream gradient of each row's loss: ``grad`` (rows,), or a
    single value (shape () or (1,)) for every row. Every row's gradient is also multiplied by
    ``grad_scale`` (1 / the number of rows counted, for a mean); ignored rows get zeros."""
    logits, target, lse = _as_ndarray("logits", logits), _as_ndarray("target", target), _as_ndarray("lse", lse)
    grad = _as_ndarray("grad", grad)
    check_arguments(logits, target, label_smoothing)
    check_row_values("lse", lse, logits)
    check_row_values("grad", grad, logits, single=True)
    ignored, ignoring = _check_targets(target, logits.shape[1], ignore_index)
    if not _loops_take(logits):
        return cross_entropy_backward_numpy(grad, logits, lse, target, ignore_index, label_smoothing, grad_scale)
    dlogits = np.empty(logits.shape, logits.dtype)
    _backward_rows(grad.astype(logits.dtype).reshape(-1), logits, lse, target, ignored, ignoring,
                   *_smoothing_scalars(logits, label_smoothing), logits.dtype.type(grad_scale), dlogits)
    return dlogits
