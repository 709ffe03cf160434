"""The normalizations as functions (``batch_norm``, ``layer_norm``, ...) and their autograd Functions,
each forward and backward one fused kernel call.

Every norm is brought to the layout its kernel expects, without copying:
* LayerNorm / RMSNorm: (rows, cols) = (leading dims, normalized dims);
* GroupNorm / InstanceNorm: (N, C, S) with S the product of the spatial dims, statistics per
  (sample, group); InstanceNorm is GroupNorm with one channel per group;
* BatchNorm: (N, C, S), statistics per channel over (N, S).
The formulas, in plain numpy, are in :mod:`tinynorm.kernels.reference`; docs/normalization.md
derives them.

The arguments are checked here, once, for every caller (the layers of ``tinynorm.nn`` included): the
input's type, dtype and shape, each parameter's and running statistic's shape, dtype and device,
``eps``, ``momentum``, the group count, and that batch statistics have more than one value to
average.

Half precision, the same on every device: float16 data (``x``, ``y``, ``dx``) is normalized with float32
statistics, parameters and arithmetic, so a float32 layer (parameters, running statistics) applies
to a ``.half()`` input and returns float16. The CUDA kernels read and write float16 themselves; the
CPU kernels are float32/float64 only, so there float16 data is converted to float32 for the kernel
and the result rounded back to float16 (the same values, up to the order of float32 sums).
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import Any

from .. import dtypes
from .._checks import (
    check_bool,
    check_eps,
    check_floating,
    check_momentum,
    check_same_device,
    check_tensor,
)
from ..autograd.function import Context, Function
from ..tensor import Tensor


def as_3d(x: Any) -> Any:
    """(N, C, *spatial) as (N, C, S) without a copy; S spelled out so that an empty batch works too."""
    return x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:]))


def stat_dtype(dtype: Any) -> Any:
    """The dtype of statistics, parameters and arithmetic for data of ``dtype``: float32 for float16."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def astype_if_needed(array: Any, dtype: Any) -> Any:
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
    return astype_if_needed(param if param.ndim == 1 else param.reshape(-1), dtype)


def _as_rows(x: Any, normalized_ndim: int) -> Any:
    """``x`` as (leading dims, normalized dims), both spelled out so that zero-size dims work too."""
    lead = x.ndim - normalized_ndim
    return x.reshape(math.prod(x.shape[:lead]), math.prod(x.shape[lead:]))


# ------------------------------------------------------------------------------ autograd Functions
class LayerNorm(Function):
    backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, normalized_ndim: int, eps: float) -> Any:
        x2 = kernel_data(ctx.xp, _as_rows(x, normalized_ndim))
        weight = _flat(weight, stat_dtype(x.dtype))
        y, mean, rstd = ctx.xp.layer_norm_forward(x2, weight, _flat(bias, stat_dtype(x.dtype)), eps)
        ctx.save_for_backward(x2, mean, rstd, weight)
        ctx.shape, ctx.normalized_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        return astype_if_needed(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x2, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.layer_norm_backward(astype_if_needed(grad.reshape(x2.shape), x2.dtype), x2,
                                                        mean, rstd, weight)
        return dx.reshape(ctx.shape), dweight.reshape(ctx.normalized_shape), dbias.reshape(ctx.normalized_shape)


class RMSNorm(Function):
    backward_name = "RmsNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, normalized_ndim: int, eps: float) -> Any:
        x2 = kernel_data(ctx.xp, _as_rows(x, normalized_ndim))
        weight = _flat(weight, stat_dtype(x.dtype))
        y, rstd = ctx.xp.rms_norm_forward(x2, weight, eps)
        ctx.save_for_backward(x2, rstd, weight)
        ctx.shape, ctx.normalized_shape = x.shape, x.shape[x.ndim - normalized_ndim:]
        return astype_if_needed(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x2, rstd, weight = ctx.saved_tensors
        dx, dweight = ctx.xp.rms_norm_backward(astype_if_needed(grad.reshape(x2.shape), x2.dtype), x2, rstd, weight)
        return dx.reshape(ctx.shape), dweight.reshape(ctx.normalized_shape)


class GroupNorm(Function):
    backward_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, num_groups: int, eps: float) -> Any:
        x3 = kernel_data(ctx.xp, as_3d(x))
        weight, bias = astype_if_needed(weight, stat_dtype(x.dtype)), astype_if_needed(bias, stat_dtype(x.dtype))
        y, mean, rstd = ctx.xp.group_norm_forward(x3, num_groups, weight, bias, eps)
        ctx.save_for_backward(x3, mean, rstd, weight)
        ctx.shape, ctx.num_groups = x.shape, num_groups
        return astype_if_needed(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x3, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.group_norm_backward(astype_if_needed(grad.reshape(x3.shape), x3.dtype), x3,
                                                        mean, rstd, ctx.num_groups, weight)
        return dx.reshape(ctx.shape), dweight, dbias


class BatchNorm(Function):
    """Normalize each channel with the given statistics ``mean`` and ``rstd`` (arrays, not tensors), or,
    with ``mean=None``, with the batch's own, computed in the same kernel call as the output (which also
    moves the ``running_mean``/``running_var`` buffers, when given, toward them).

    ``training=True`` means the statistics were computed from ``x`` itself, so they depend on it and
    the gradient gets BatchNorm's two mean-correction terms; ``training=False`` means they are
    running statistics, constants, and the layer is a per-channel affine map. ``mean`` and ``rstd`` are
    in the statistics dtype of ``x`` (:func:`stat_dtype`).
    """

    backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, mean: Any, rstd: Any, training: bool, *,
                running_mean: Any = None, running_var: Any = None, momentum: float | None = None,
                eps: float | None = None) -> Any:
        x3 = kernel_data(ctx.xp, as_3d(x))
        weight, bias = astype_if_needed(weight, stat_dtype(x.dtype)), astype_if_needed(bias, stat_dtype(x.dtype))
        if mean is None:
            y, mean, rstd = ctx.xp.batch_norm_training_forward(x3, weight, bias, eps, running_mean, running_var,
                                                                momentum)
        else:
            y = ctx.xp.batch_norm_forward(x3, mean, rstd, weight, bias)
        ctx.save_for_backward(x3, mean, rstd, weight)
        ctx.shape, ctx.training = x.shape, training
        return astype_if_needed(y, x.dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x3, mean, rstd, weight = ctx.saved_tensors
        dx, dweight, dbias = ctx.xp.batch_norm_backward(astype_if_needed(grad.reshape(x3.shape), x3.dtype), x3,
                                                        mean, rstd, weight, ctx.training)
        return dx.reshape(ctx.shape), dweight, dbias


# -------------------------------------------------------------------------------------- functions
def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    op = "layer_norm"
    x = check_norm_input(op, input)
    shape = check_trailing_dims(op, x, normalized_shape)
    weight = check_param(op, "weight", weight, shape, x, "normalized_shape")
    bias = check_param(op, "bias", bias, shape, x, "normalized_shape")
    return LayerNorm.apply(x, weight, bias, len(shape), check_eps(eps, op=op))


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Divide by the root mean square over the trailing dims; ``eps=None`` is the dtype's machine epsilon."""
    op = "rms_norm"
    x = check_norm_input(op, input)
    shape = check_trailing_dims(op, x, normalized_shape)
    weight = check_param(op, "weight", weight, shape, x, "normalized_shape")
    eps = check_eps(eps, op=op, allow_none=True)
    if eps is None:
        eps = float(x._backend.finfo(x.dtype).eps)
    return RMSNorm.apply(x, weight, len(shape), eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each sample's channels in ``num_groups`` groups, over each group's channels and spatial dims."""
    op = "group_norm"
    x = check_norm_input(op, input, "(N, C, *)")
    num_groups = check_groups(op, x, num_groups)
    weight = check_param(op, "weight", weight, x.shape[1:2], x, "one value per channel")
    bias = check_param(op, "bias", bias, x.shape[1:2], x, "one value per channel")
    return GroupNorm.apply(x, weight, bias, num_groups, check_eps(eps, op=op))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """BatchNorm over (N, C, *), as ``torch.nn.functional.batch_norm``.

    ``training=True`` normalizes with the batch's statistics (biased variance) and, when running
    buffers are given, updates them in place: ``running = (1 - momentum) * running + momentum * batch``
    with the *unbiased* batch variance (an empty batch leaves them as they are). ``training=False``
    normalizes with the running statistics.
    """
    op = "batch_norm"
    x = check_norm_input(op, input, "(N, C, *)")
    running_mean, running_var, weight, bias = check_channel_params(op, x, running_mean, running_var, weight, bias)
    training = check_bool(op, "training", training)
    momentum, eps = check_momentum(momentum, op=op), check_eps(eps, op=op)
    if not training:
        return _normalize_with_running_stats(op, x, running_mean, running_var, weight, bias, eps)
    count = x.shape[0] * math.prod(x.shape[2:])
    if count == 1:
        raise ValueError(f"{op}: Expected more than 1 value per channel when training, got input size {tuple(x.shape)}")
    # The statistics, the running update (skipped for an empty batch) and the output: one kernel call. The
    # buffers go in as arrays: updated in place, they are not inputs that a gradient flows to.
    buffers = (None, None) if running_mean is None else (running_mean.array, running_var.array)
    return BatchNorm.apply(x, weight, bias, None, None, True, running_mean=buffers[0], running_var=buffers[1],
                           momentum=momentum, eps=eps)


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) over its spatial dims, as ``torch.nn.functional.instance_norm``.

    With ``use_input_stats=True`` the statistics are the instance's own; running buffers, if given,
    are updated with their average over the batch (unbiased variances; an empty batch leaves them as
    they are). With ``False`` the running statistics are used, as BatchNorm in eval mode.
    """
    op = "instance_norm"
    x = check_norm_input(op, input, "(N, C, *spatial)", min_ndim=3)
    running_mean, running_var, weight, bias = check_channel_params(op, x, running_mean, running_var, weight, bias)
    use_input_stats = check_bool(op, "use_input_stats", use_input_stats)
    momentum, eps = check_momentum(momentum, op=op), check_eps(eps, op=op)
    if not use_input_stats:
        return _normalize_with_running_stats(op, x, running_mean, running_var, weight, bias, eps)
    batch, channels, spatial = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    if spatial == 1:
        raise ValueError(f"{op}: Expected more than 1 spatial element when training, got input size {tuple(x.shape)}")
    if running_mean is not None and x.numel():
        xp = x._backend
        mean, var = xp.batch_norm_stats(kernel_data(xp, x.array.reshape(1, batch * channels, spatial)))
        # The mean over the batch of each instance's unbiased variance is the correction of the mean
        # of the biased ones: the correction is linear.
        update_running_stats(running_mean, running_var, mean.reshape(batch, channels).mean(axis=0),
                             var.reshape(batch, channels).mean(axis=0), spatial, momentum)
    return GroupNorm.apply(x, weight, bias, channels, eps)


def _normalize_with_running_stats(op: str, x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                                  weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """BatchNorm in evaluation mode: a per-channel affine map with the running statistics."""
    if running_mean is None:
        raise ValueError(f"{op}: running_mean and running_var are needed to normalize with running statistics")
    xp, dtype = x._backend, stat_dtype(x.dtype)
    mean, var = astype_if_needed(running_mean.array, dtype), astype_if_needed(running_var.array, dtype)
    return BatchNorm.apply(x, weight, bias, mean, astype_if_needed(xp.batch_norm_rstd(var, eps), dtype), False)


def update_running_stats(running_mean: Tensor, running_var: Tensor, mean: Any, var: Any, count: int,
                         momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, in place, in the buffers' dtype.

    ``var`` is the biased variance of ``count`` values; the running variance tracks the unbiased one,
    ``var * count / (count - 1)``, as PyTorch does. One kernel (``batch_norm_update_running``): on the
    GPU, array arithmetic would take seven launches.
    """
    running_mean._backend.batch_norm_update_running(running_mean.array, running_var.array, mean, var, count, momentum)


# ---------------------------------------------------------------------------- argument checks
def check_norm_input(op: str, input: object, layout: str | None = None, min_ndim: int = 2) -> Tensor:
    """``input`` after checking it is a floating-point Tensor with at least ``min_ndim`` dims when a
    ``layout`` such as ``"(N, C, *)"`` is given."""
    x = check_floating(op, "input", check_tensor(op, "input", input))
    if layout is not None and x.ndim < min_ndim:
        raise ValueError(f"{op}: expected input of shape {layout}, got {tuple(x.shape)}")
    return x


def normalized_shape_tuple(op: str, normalized_shape: Any) -> tuple[int, ...]:
    """``normalized_shape`` (an int or a non-empty sequence of ints >= 0, as PyTorch) as a tuple."""
    shape = (normalized_shape,) if isinstance(normalized_shape, Integral) else normalized_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if shape is None or not all(isinstance(n, Integral) and not isinstance(n, bool) for n in shape):
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}")
    if not shape or min(shape) < 0:
        raise ValueError(f"{op}: normalized_shape must be an int >= 0 or a non-empty sequence of them, "
                         f"got {normalized_shape!r}")
    return tuple(int(n) for n in shape)


def check_trailing_dims(op: str, x: Tensor, normalized_shape: Any) -> tuple[int, ...]:
    """``normalized_shape`` as a tuple after checking that ``x`` ends with those dims."""
    shape = normalized_shape_tuple(op, normalized_shape)
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(
            f"{op}: expected input with trailing dims {shape} (normalized_shape), got shape {tuple(x.shape)}"
        )
    return shape


def check_param(op: str, name: str, param: object, shape: tuple[int, ...], x: Tensor, what: str) -> Tensor | None:
    """An affine parameter or running statistic of the norm of ``x``: None, or a Tensor of exactly
    ``shape`` (``what`` says what that shape is), on x's device, in x's dtype or its statistics dtype
    (a float32 layer takes float16 input)."""
    if param is None:
        return None
    # The usual case in a few comparisons: this runs for every parameter of every norm call.
    if isinstance(param, Tensor) and param.device == x.device and param.array.dtype == x.array.dtype \
            and param.array.shape == tuple(shape):
        return param
    check_tensor(op, name, param)
    if tuple(param.shape) != tuple(shape):
        raise ValueError(f"{op}: expected {name} of shape {tuple(shape)} ({what}) for input of shape "
                         f"{tuple(x.shape)}, got {tuple(param.shape)}")
    if param.dtype != x.dtype and param.dtype != stat_dtype(x.dtype):
        raise TypeError(f"{op}: {name} has dtype {param.dtype} but input has dtype {x.dtype} (only float16 input "
                        f"may meet a float32 layer); convert one of them, e.g. layer.to({x.dtype})")
    return check_same_device(op, name, param, x.device)


def check_channel_params(op: str, x: Tensor, *params: object) -> tuple[Tensor | None, ...]:
    """BatchNorm's and InstanceNorm's ``running_mean, running_var, weight, bias``: each None or ``(C,)``,
    the running statistics both given or both None."""
    channels = x.array.shape[1:2]
    running_mean, running_var, weight, bias = [
        check_param(op, name, param, channels, x, "one value per channel")
        for name, param in zip(("running_mean", "running_var", "weight", "bias"), params)]
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{op}: running_mean and running_var must both be None or both be given")
    return running_mean, running_var, weight, bias


def check_groups(op: str, x: Tensor, num_groups: object) -> int:
    """``num_groups`` after checking it is a positive int dividing x's channels, with groups of more
    than one value (a single value has no variance)."""
    if not isinstance(num_groups, Integral) or isinstance(num_groups, bool):
        raise TypeError(f"{op}: num_groups must be an int, got {num_groups!r} ({type(num_groups).__name__})")
    if num_groups <= 0 or x.shape[1] % num_groups:
        raise ValueError(f"{op}: num_groups must be a positive int dividing the {x.shape[1]} channels of input "
                         f"{tuple(x.shape)}, got {num_groups}")
    if x.shape[1] // num_groups * math.prod(x.shape[2:]) == 1:
        raise ValueError(f"{op}: Expected more than 1 value per group, got input size {tuple(x.shape)} with "
                         f"num_groups={num_groups}")
    return int(num_groups)
