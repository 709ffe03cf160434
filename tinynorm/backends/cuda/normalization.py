"""The normalization kernels for :class:`CudaArray`: the CPU backend's names and contracts on the GPU.

Each name is the checked kernel wrapper of :mod:`tinynorm.kernels.cuda` itself (one wrapper per norm:
it checks its arguments once, copies a strided input to C order, allocates the results and launches),
as the CPU backend's names are the wrappers of ``tinynorm/kernels/cpu/``, whose formulas they share.

One difference in dtypes, shared by every function here: ``x``, ``dy`` and the results of their
shape (``y``, ``dx``) are float16 or float32, while statistics (``mean``, ``rstd``, ``var``),
parameters and parameter gradients are always float32, and the arithmetic is float32. float64 data is
refused with a TypeError: the kernels have no float64 version (consumer GPUs run it at 1/64 speed),
and computing it in float32 would silently lose the precision the caller asked for.
"""
from __future__ import annotations

import numpy as np

from ...kernels.cuda import batch_norm as _bn
from ...kernels.cuda.batch_norm import (
    batch_norm_backward,
    batch_norm_backward_elemt,
    batch_norm_backward_reduce,
    batch_norm_forward,
    batch_norm_stats,
)
from ...kernels.cuda.group_norm import group_norm_backward, group_norm_forward
from ...kernels.cuda.layer_norm import layer_norm_backward, layer_norm_forward
from ...kernels.cuda.rms_norm import rms_norm_backward, rms_norm_forward
from .array import CudaArray

__all__ = [
    "HALF_NORM_KERNELS",
    "batch_norm_backward",
    "batch_norm_backward_elemt",
    "batch_norm_backward_reduce",
    "batch_norm_forward",
    "batch_norm_rstd",
    "batch_norm_stats",
    "batch_norm_training_forward",
    "batch_norm_update_running",
    "group_norm_backward",
    "group_norm_forward",
    "layer_norm_backward",
    "layer_norm_forward",
    "rms_norm_backward",
    "rms_norm_forward",
]

# The kernels read and write float16 data themselves (float32 statistics and arithmetic), so the
# ops hand them float16 arrays as they are; see tinynorm/ops/normalization.py.
HALF_NORM_KERNELS = True


def batch_norm_rstd(var: CudaArray, eps: float) -> CudaArray:
    """``1 / sqrt(var + eps)`` per channel, float32 ``(C,)``, in one launch (float64 variances, from
    SyncBatchNorm's host merge, are rounded to float32 first)."""
    return _bn.batch_norm_rstd(_float32(var), eps)


def batch_norm_update_running(running_mean: CudaArray, running_var: CudaArray, mean: CudaArray, var: CudaArray,
                              count: int, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` in place, the variance unbiased (see the
    kernel). Statistics in float64 (SyncBatchNorm's, merged on the host) are rounded to float32 first."""
    _bn.batch_norm_update_running(running_mean, running_var, _float32(mean), _float32(var), count, momentum)


def batch_norm_training_forward(x: CudaArray, weight: CudaArray | None, bias: CudaArray | None, eps: float,
                                running_mean: CudaArray | None = None, running_var: CudaArray | None = None,
                                momentum: float = 0.1) -> tuple[CudaArray, CudaArray, CudaArray]:
    """``(y, mean, rstd)`` with the batch's statistics, the running ones moved toward them when given (an
    empty batch leaves them), last, once every other argument has passed its kernel's checks: four
    launches."""
    mean, var = batch_norm_stats(x)
    rstd = batch_norm_rstd(var, eps)
    y = batch_norm_forward(x, mean, rstd, weight, bias)
    if running_mean is not None and x.size:
        batch_norm_update_running(running_mean, running_var, mean, var, x.shape[0] * x.shape[2], momentum)
    return y, mean, rstd


def _float32(array: object) -> object:
    """A statistic as the kernels take it: float32 (a float64 CudaArray is converted; others pass to the checks)."""
    if isinstance(array, CudaArray) and array.dtype == np.float64:
        return array.astype(np.float32)
    return array
