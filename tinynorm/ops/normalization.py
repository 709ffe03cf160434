"""Autograd Functions of the normalization layers: each forward and backward is one fused kernel call.

Every norm is brought to the layout its kernel expects, without copying:
* LayerNorm / RMSNorm: (rows, cols) = (leading dims, normalized dims);
* GroupNorm / InstanceNorm: (N, C, S) with S the product of the spatial dims, statistics per
  (sample, group); InstanceNorm is GroupNorm with one channel per group;
* BatchNorm: (N, C, S), statistics per channel over (N, S).
The formulas are in the kernels' docstrings (``tinynorm/kernels/cpu/``) and in docs/normalization.md.

Half precision, the same on every device: float16 data (``x``, ``y``, ``dx``) is normalized with float32
statistics, parameters and arithmetic, so a float32 layer (parameters, running statistics) applies
to a ``.half()`` input and returns float16. The CUDA kernels read and write float16 themselves; the
CPU kernels are float32/float64 only, so there float16 data is converted to float32 for the kernel
and the result rounded back to float16 (the same values, up to the order of float32 sums).
"""
from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor


def as_3d(x: Any) -> Any:
    """(N, C, *spatial) as (N, C, S) without a copy; S spelled out so that an empty batch works too."""
    return x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:]))


def stat_dtype(dtype: Any) -> Any:
    """The dtype of statistics, parameters and arithmetic for data of ``dtype``: float32 for float16."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def cast(array: Any, dtype: Any) -> Any:
    """``array`` in ``dtype``, copied only when it is not in it already (None stays None)."""
    return array if array is None or array.dtype == dtype else array.astype(dtype)


def kernel_data(xp: Any, x: Any) -> Any:
    """``x`` as ``xp``'s norm kernels take it: float16 becomes float32 where they have no float16 version.

    Each backend says whether its kernels read float16 (``HALF_NORM_KERNELS``: the CUDA ones do).
    """
    if x.dtype == dtypes.float16 and not xp.HALF_NORM_KERNELS:
        return x.astype(dtypes.float32)
    return x


def _flat(param: Any, dtype: Any) -> Any:
    """An affine parameter as the kernels take it: 1-D, in the statistics dtype (None stays None)."""
    if param is None:
        return None
    return cast(param if param.ndim == 1 else param.reshape(-1), dtype)


class LayerNorm(Function):
    backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, normalized_ndim: int, eps: float) -> Any:
        cols = math.prod(x.shape[x.ndim - normalized_ndim:])
        x2 = kernel_data(ctx.xp, x.reshape(-1, cols))
        weight = _flat(weight, stat_dtype(x.dtype))
        y, mean, rstd = ctx.xp.layer_norm_forward(x2, weight, _flat(bias, stat_dtype(x.dtype)), eps)
        ctx.save_for_backward(x2, mean, rstd, weight)
        ctx.shape, ctx.normalized_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        return cast(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x2, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.layer_norm_backward(cast(grad.reshape(x2.shape), x2.dtype), x2, mean, rstd, weight)
        return dx.reshape(ctx.shape), dweight.reshape(ctx.normalized_shape), dbias.reshape(ctx.normalized_shape)


class RMSNorm(Function):
    backward_name = "RmsNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, normalized_ndim: int, eps: float) -> Any:
        cols = math.prod(x.shape[x.ndim - normalized_ndim:])
        x2 = kernel_data(ctx.xp, x.reshape(-1, cols))
        weight = _flat(weight, stat_dtype(x.dtype))
        y, rstd = ctx.xp.rms_norm_forward(x2, weight, eps)
        ctx.save_for_backward(x2, rstd, weight)
        ctx.shape, ctx.normalized_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        return cast(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x2, rstd, weight = ctx.saved_tensors
        dx, dweight = ctx.xp.rms_norm_backward(cast(grad.reshape(x2.shape), x2.dtype), x2, rstd, weight)
        return dx.reshape(ctx.shape), dweight.reshape(ctx.normalized_shape)


class GroupNorm(Function):
    backward_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, num_groups: int, eps: float) -> Any:
        x3 = kernel_data(ctx.xp, as_3d(x))
        weight, bias = cast(weight, stat_dtype(x.dtype)), cast(bias, stat_dtype(x.dtype))
        y, mean, rstd = ctx.xp.group_norm_forward(x3, num_groups, weight, bias, eps)
        ctx.save_for_backward(x3, mean, rstd, weight)
        ctx.shape, ctx.num_groups = x.shape, num_groups
        return cast(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x3, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.group_norm_backward(cast(grad.reshape(x3.shape), x3.dtype), x3, mean, rstd,
                                                        ctx.num_groups, weight)
        return dx.reshape(ctx.shape), dweight, dbias


class BatchNorm(Function):
    """Normalize each channel with the given statistics ``mean`` and ``rstd`` (arrays, not tensors).

    ``training=True`` means the statistics were computed from ``x`` itself, so they depend on it and
    the gradient gets BatchNorm's two mean-correction terms; ``training=False`` means they are
    running statistics, constants, and the layer is a per-channel affine map. ``mean`` and ``rstd`` are
    in the statistics dtype of ``x`` (:func:`stat_dtype`).
    """

    backward_name = "NativeBatchNormBackward0"


    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, mean: Any, rstd: Any, training: bool) -> Any:
        x3 = kernel_data(ctx.xp, as_3d(x))
        weight, bias = cast(weight, stat_dtype(x.dtype)), cast(bias, stat_dtype(x.dtype))
        y = ctx.xp.batch_norm_forward(x3, mean, rstd, weight, bias)
        ctx.save_for_backward(x3, mean, rstd, weight)
        ctx.shape, ctx.training = x.shape, training
        return cast(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x3, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.batch_norm_backward(cast(grad.reshape(x3.shape), x3.dtype), x3, mean, rstd,
                                                        weight, ctx.training)
        return dx.reshape(ctx.shape), dweight, dbias


def layer_norm(x: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    normalized_shape = check_trailing_dims("layer_norm", x, normalized_shape)
    return LayerNorm.apply(x, weight, bias, len(normalized_shape), float(eps))


def rms_norm(x: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Divide by the root mean square over the trailing dims; ``eps=None`` is the dtype's machine epsilon."""
    normalized_shape = check_trailing_dims("rms_norm", x, normalized_shape)
    if eps is None:
        eps = float(x._backend.finfo(x.dtype).eps)
    return RMSNorm.apply(x, weight, len(normalized_shape), float(eps))


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each sample's channels in ``num_groups`` groups, over each group's channels and spatial dims."""
    if x.ndim < 2:
        raise ValueError(f"group_norm: expected input of shape (N, C, *), got {tuple(x.shape)}")
    if x.shape[1] % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the {x.shape[1]} channels of input {tuple(x.shape)}")
    return GroupNorm.apply(x, weight, bias, num_groups, float(eps))


def check_trailing_dims(op: str, x: Tensor, normalized_shape: Any) -> tuple[int, ...]:
    """Return ``normalized_shape`` as a tuple after checking that ``x`` ends with those dims."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or tuple(x.shape[x.ndim - len(shape):]) != shape or x.ndim < len(shape):
        raise ValueError(
            f"{op}: expected input with trailing dims {shape} (normalized_shape), got shape {tuple(x.shape)}"
        )
    return shape


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """BatchNorm over (N, C, *), as ``torch.nn.functional.batch_norm``.

    ``training=True`` normalizes with the batch's statistics (biased variance) and, when running
    buffers are given, updates them in place: ``running = (1 - momentum) * running + momentum * batch``
    with the *unbiased* batch variance. ``training=False`` normalizes with the running statistics.
    """
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, *), got {tuple(x.shape)}")
    xp, dtype = x._backend, stat_dtype(x.dtype)
    if training:
        check_values_per_channel("batch_norm", x)
        count = x.numel() // x.shape[1]
        mean, var = xp.batch_norm_stats(kernel_data(xp, as_3d(x.array)))
        if running_mean is not None and running_var is not None:
            update_running_stats(running_mean, running_var, mean, var, count, momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when training=False")
        mean, var = cast(running_mean.array, dtype), cast(running_var.array, dtype)
    rstd = cast(xp.batch_norm_rstd(var, eps), dtype)
    return BatchNorm.apply(x, weight, bias, mean, rstd, training)


def check_values_per_channel(op: str, x: Tensor) -> None:
    """Batch statistics need two values per channel or more (one value has no variance)."""
    if x.numel() // x.shape[1] <= 1:
        raise ValueError(
            f"{op}: Expected more than 1 value per channel when training, got input size {tuple(x.shape)}"
        )


def update_running_stats(running_mean: Tensor, running_var: Tensor, mean: Any, var: Any, count: int,
                         momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, in place, in the buffers' dtype.

    ``var`` is the biased variance of ``count`` values; the running variance tracks the unbiased one,
    ``var * count / (count - 1)``, as PyTorch does. One kernel (``batch_norm_update_running``): on the
    GPU, array arithmetic would take seven launches.
    """
    running_mean._backend.batch_norm_update_running(running_mean.array, running_var.array, mean, var, count, momentum)


def instance_norm(x: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) over its spatial dims, as ``torch.nn.functional.instance_norm``.

    With ``use_input_stats=True`` the statistics are the instance's own; running buffers, if given,
    are updated with their average over the batch (unbiased variances). With ``False`` the running
    statistics are used, as BatchNorm in eval mode.
    """
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected input of shape (N, C, *spatial), got {tuple(x.shape)}")
    if not use_input_stats:
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    batch, channels = x.shape[0], x.shape[1]
    spatial = x.numel() // max(batch * channels, 1)
    if spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {tuple(x.shape)}")
    if running_mean is not None and running_var is not None:
        xp = x._backend
        mean, var = xp.batch_norm_stats(kernel_data(xp, x.array.reshape(1, batch * channels, spatial)))
        # The mean over the batch of each instance's unbiased variance is the correction of the mean
        # of the biased ones: the correction is linear.
        update_running_stats(running_mean, running_var, mean.reshape(batch, channels).mean(axis=0),
                             var.reshape(batch, channels).mean(axis=0), spatial, momentum)
    return GroupNorm.apply(x, weight, bias, channels, float(eps))
