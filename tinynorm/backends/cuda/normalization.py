"""The normalization kernels for :class:`CudaArray`: the CPU backend's names and contracts on the GPU.

Each function unwraps its arrays (``as_numba``: a view, or a C-contiguous copy of a strided view),
calls the kernel of the same name in :mod:`tinynorm.kernels.cuda` and wraps the results, sharing
their memory. The formulas are the CPU kernels' (``tinynorm/kernels/cpu/``).

One difference in dtypes, shared by every function here: ``x``, ``dy`` and the results of their
shape (``y``, ``dx``) are float16 or float32, while statistics (``mean``, ``rstd``, ``var``),
parameters and parameter gradients are always float32, and the arithmetic is float32. float64 data is
refused with a TypeError: the kernels have no float64 version (consumer GPUs run it at 1/64 speed),
and computing it in float32 would silently lose the precision the caller asked for.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...kernels.cuda import batch_norm as _bn
from ...kernels.cuda import group_norm as _gn
from ...kernels.cuda import layer_norm as _ln
from ...kernels.cuda import rms_norm as _rms
from ...kernels.cuda._shared import DATA_DTYPES
from .array import CudaArray, check_array

__all__ = [
    "HALF_NORM_KERNELS",
    "batch_norm_backward",
    "batch_norm_backward_elemt",
    "batch_norm_backward_reduce",
    "batch_norm_forward",
    "batch_norm_rstd",
    "batch_norm_stats",
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


def _data(op: str, name: str, array: Any) -> Any:
    """A float16/float32 CudaArray as a C-contiguous numba device array for the kernel."""
    if check_array(f"{op}: {name}", array).dtype not in DATA_DTYPES:
        raise TypeError(
            f"{op}: {name} has dtype {array.dtype}, but the CUDA norm kernels take float16 or float32 data "
            f"(statistics and arithmetic in float32); convert it with .float(), or normalize float64 on the CPU"
        )
    return array.as_numba()


def _param(op: str, name: str, array: Any) -> Any:
    """A parameter or statistic (CudaArray or None) for the kernel; the kernel checks shape and float32."""
    if array is None:
        return None
    if not isinstance(array, CudaArray):
        raise TypeError(f"{op}: {name} must be a CudaArray or None, got {type(array).__name__}")
    return array.as_numba()


def _out(op: str, out: Any) -> Any:
    """``out`` as the numba array the kernel writes into: only a C-contiguous CudaArray can be one."""
    if out is None:
        return None
    # Only a contiguous out: as_numba would copy any other, and the kernel would write into the copy.
    if not check_array(f"{op}: out", out).is_contiguous():
        raise ValueError(f"{op}: out must be C-contiguous, got strides {out.strides} for shape {out.shape}")
    return out.as_numba()


def _wrap(*arrays: Any) -> tuple[CudaArray, ...]:
    return tuple(CudaArray.wrap(a) for a in arrays)


def layer_norm_forward(x: CudaArray, weight: CudaArray | None, bias: CudaArray | None, eps: float,
                       out: CudaArray | None = None) -> tuple[CudaArray, CudaArray, CudaArray]:
    """LayerNorm over the columns of ``x`` (rows, cols): ``(y, mean, rstd)``, y written into ``out``."""
    op = "layer_norm_forward"
    y, mean, rstd = _ln.layer_norm_forward(_data(op, "x", x), _param(op, "weight", weight),
                                           _param(op, "bias", bias), eps, out=_out(op, out))
    return (out if out is not None else CudaArray.wrap(y),) + _wrap(mean, rstd)


def layer_norm_backward(dy: CudaArray, x: CudaArray, mean: CudaArray, rstd: CudaArray,
                        weight: CudaArray | None) -> tuple[CudaArray, CudaArray, CudaArray]:
    """Gradients of :func:`layer_norm_forward`: ``(dx, dweight, dbias)``."""
    op = "layer_norm_backward"
    return _wrap(*_ln.layer_norm_backward(_data(op, "dy", dy), _data(op, "x", x), _param(op, "mean", mean),
                                          _param(op, "rstd", rstd), _param(op, "weight", weight)))


def rms_norm_forward(x: CudaArray, weight: CudaArray | None, eps: float,
                     out: CudaArray | None = None) -> tuple[CudaArray, CudaArray]:
    """RMSNorm over the columns of ``x`` (rows, cols): ``(y, rstd)``, y written into ``out``."""
    op = "rms_norm_forward"
    y, rstd = _rms.rms_norm_forward(_data(op, "x", x), _param(op, "weight", weight), eps, out=_out(op, out))
    return (out if out is not None else CudaArray.wrap(y), CudaArray.wrap(rstd))


def rms_norm_backward(dy: CudaArray, x: CudaArray, rstd: CudaArray,
                      weight: CudaArray | None) -> tuple[CudaArray, CudaArray]:
    """Gradients of :func:`rms_norm_forward`: ``(dx, dweight)``."""
    op = "rms_norm_backward"
    return _wrap(*_rms.rms_norm_backward(_data(op, "dy", dy), _data(op, "x", x), _param(op, "rstd", rstd),
                                         _param(op, "weight", weight)))


def group_norm_forward(x: CudaArray, num_groups: int, weight: CudaArray | None, bias: CudaArray | None,
                       eps: float, out: CudaArray | None = None) -> tuple[CudaArray, CudaArray, CudaArray]:
    """GroupNorm of ``x`` (N, C, S): ``(y, mean, rstd)``, statistics ``(N, num_groups)``."""
    op = "group_norm_forward"
    y, mean, rstd = _gn.group_norm_forward(_data(op, "x", x), num_groups, _param(op, "weight", weight),
                                           _param(op, "bias", bias), eps, out=_out(op, out))
    return (out if out is not None else CudaArray.wrap(y),) + _wrap(mean, rstd)


def group_norm_backward(dy: CudaArray, x: CudaArray, mean: CudaArray, rstd: CudaArray, num_groups: int,
                        weight: CudaArray | None) -> tuple[CudaArray, CudaArray, CudaArray]:
    """Gradients of :func:`group_norm_forward`: ``(dx, dweight, dbias)``."""
    op = "group_norm_backward"
    return _wrap(*_gn.group_norm_backward(_data(op, "dy", dy), _data(op, "x", x), _param(op, "mean", mean),
                                          _param(op, "rstd", rstd), num_groups, _param(op, "weight", weight)))


def batch_norm_stats(x: CudaArray) -> tuple[CudaArray, CudaArray]:
    """Per-channel mean and biased variance of ``x`` (N, C, S), float32 ``(C,)`` each."""
    return _wrap(*_bn.batch_norm_stats(_data("batch_norm_stats", "x", x)))


def batch_norm_forward(x: CudaArray, mean: CudaArray, rstd: CudaArray, weight: CudaArray | None,
                       bias: CudaArray | None, out: CudaArray | None = None) -> CudaArray:
    """``y = (x - mean[c]) * rstd[c] * weight[c] + bias[c]`` over ``x`` (N, C, S)."""
    op = "batch_norm_forward"
    y = _bn.batch_norm_forward(_data(op, "x", x), _param(op, "mean", mean), _param(op, "rstd", rstd),
                               _param(op, "weight", weight), _param(op, "bias", bias), out=_out(op, out))
    return out if out is not None else CudaArray.wrap(y)


def batch_norm_backward_reduce(dy: CudaArray, x: CudaArray, mean: CudaArray,
                               rstd: CudaArray) -> tuple[CudaArray, CudaArray]:
    """Per-channel ``(sum(dy), sum(dy * xhat))`` over (N, S), float32 ``(C,)`` each."""
    op = "batch_norm_backward_reduce"
    return _wrap(*_bn.batch_norm_backward_reduce(_data(op, "dy", dy), _data(op, "x", x),
                                                 _param(op, "mean", mean), _param(op, "rstd", rstd)))


def batch_norm_backward_elemt(dy: CudaArray, x: CudaArray, mean: CudaArray, rstd: CudaArray,
                              weight: CudaArray | None, mean_dy: CudaArray, mean_dy_xhat: CudaArray) -> CudaArray:
    """``dx = rstd * weight * (dy - mean_dy - xhat * mean_dy_xhat)`` per channel."""
    op = "batch_norm_backward_elemt"
    return CudaArray.wrap(_bn.batch_norm_backward_elemt(
        _data(op, "dy", dy), _data(op, "x", x), _param(op, "mean", mean), _param(op, "rstd", rstd),
        _param(op, "weight", weight), _param(op, "mean_dy", mean_dy), _param(op, "mean_dy_xhat", mean_dy_xhat)))


def batch_norm_backward(dy: CudaArray, x: CudaArray, mean: CudaArray, rstd: CudaArray, weight: CudaArray | None,
                        training: bool) -> tuple[CudaArray, CudaArray, CudaArray]:
    """Gradients of :func:`batch_norm_forward`: ``(dx, dweight, dbias)`` (see the CPU kernel)."""
    op = "batch_norm_backward"
    return _wrap(*_bn.batch_norm_backward(_data(op, "dy", dy), _data(op, "x", x), _param(op, "mean", mean),
                                          _param(op, "rstd", rstd), _param(op, "weight", weight), bool(training)))


def batch_norm_rstd(var: CudaArray, eps: float) -> CudaArray:
    """``1 / sqrt(var + eps)`` per channel, float32 ``(C,)``, in one launch."""
    return CudaArray.wrap(_bn.batch_norm_rstd(_param("batch_norm_rstd", "var", _float32(var)), eps))


def batch_norm_update_running(running_mean: CudaArray, running_var: CudaArray, mean: CudaArray, var: CudaArray,
                              count: int, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` in place, the variance unbiased (see the
    kernel). Statistics in float64 (SyncBatchNorm's, merged on the host) are rounded to float32 first."""
    op = "batch_norm_update_running"
    _bn.batch_norm_update_running(_param(op, "running_mean", running_mean), _param(op, "running_var", running_var),
                                  _param(op, "mean", _float32(mean)), _param(op, "var", _float32(var)), count,
                                  momentum)


def _float32(array: Any) -> Any:
    """A statistic as the kernels take it: float32 (a float64 CudaArray is converted; others pass to the checks)."""
    if isinstance(array, CudaArray) and array.dtype == np.float64:
        return array.astype(np.float32)
    return array
