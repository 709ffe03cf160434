"""Softmax cross-entropy over the rows of a 2-D array of logits, forward and backward, on the CPU.

With ``C`` classes, label smoothing ``s`` and ``z = x - max(x)`` (a row shifted by its maximum, so no
``exp`` overflows), a row's log-probabilities are ``z - log(sum(exp(z)))`` and its loss against the
target distribution ``(1 - s) * onehot(y) + s / C`` is

    loss = log(sum(exp(z))) - (1 - s) * z[y] - (s / C) * sum(z)

The forward returns each row's loss (0 for a row whose target is ``ignore_index``) and its
log-sum-exp ``lse = max(x) + log(sum(exp(z)))``, which is all the backward needs: a row's gradient is
``softmax(x) - target distribution = exp(x - lse) - (1 - s) * onehot(y) - s / C``, times the row's
upstream gradient. One number per row is kept between the two passes, where PyTorch's
``log_softmax`` + ``nll_loss`` keeps the (rows, C) log-probabilities. These functions are the reference for
:mod:`tinynorm.kernels.cuda.cross_entropy`, which computes the same in one GPU kernel each way.

Targets must be in ``[0, C)`` or equal to ``ignore_index``: these functions raise an ``IndexError``
on others (``ops.losses`` checks them first for both devices; the CUDA kernels treat them as ignored).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..._checks import check_number
from ._shared import FLOAT_DTYPES


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


def _check_targets(target: np.ndarray, classes: int, ignore_index: int) -> None:
    """Every target a class index in [0, classes) or ``ignore_index``, as PyTorch's IndexError says
    (numpy's indexing would wrap a negative one, such as -3, to a class from the end)."""
    counted = target[target != ignore_index]
    if counted.size and (counted.min() < 0 or counted.max() >= classes):
        bad = counted[(counted < 0) | (counted >= classes)][0]
        raise IndexError(f"target {bad} is out of bounds: class indices must be in [0, {classes}) "
                         f"or ignore_index={ignore_index}")


def _as_ndarray(name: str, array: object) -> np.ndarray:
    """``array`` after checking it is an ndarray; a numpy scalar (what arithmetic on 0-d arrays returns,
    such as the upstream gradient of ``loss * 0.5``) becomes a 0-d array."""
    if isinstance(array, np.generic):
        return np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    return array


def cross_entropy_forward(logits: np.ndarray, target: np.ndarray, ignore_index: int = -100,
                          label_smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Each row's loss (rows,) and log-sum-exp (rows,), in logits' dtype; ignored rows have loss 0."""
    logits, target = _as_ndarray("logits", logits), _as_ndarray("target", target)
    check_arguments(logits, target, label_smoothing)
    _check_targets(target, logits.shape[1], ignore_index)
    row_max = logits.max(axis=1, keepdims=True)
    z = logits - row_max
    log_total = np.log(np.exp(z).sum(axis=1))
    kept = target != ignore_index
    picked = np.take_along_axis(z, np.where(kept, target, 0)[:, None], axis=1)[:, 0]
    losses = log_total - (1 - label_smoothing) * picked
    if label_smoothing:  # skipped at s = 0: 0 * sum(z) would be NaN for a row with a -inf logit
        losses -= label_smoothing / logits.shape[1] * z.sum(axis=1)
    return np.where(kept, losses, 0).astype(logits.dtype, copy=False), row_max[:, 0] + log_total


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
    _check_targets(target, logits.shape[1], ignore_index)
    rows, classes = logits.shape
    dlogits = np.exp(logits - lse[:, None])
    dlogits -= label_smoothing / classes
    kept = target != ignore_index
    dlogits[np.arange(rows)[kept], target[kept]] -= 1 - label_smoothing
    dlogits *= grad.astype(logits.dtype).reshape(-1, 1) * logits.dtype.type(grad_scale)  # (rows, 1) or (1, 1)
    dlogits[~kept] = 0
    return dlogits
