"""Convolution (1-D and 2-D) over channel-first tensors, with PyTorch's semantics and errors (pooling
is in ``ops/pooling.py``).

A 2-D convolution is one differentiable op, :class:`Conv2d`, whose forward and backward are the
backend's ``conv2d_forward`` / ``conv2d_backward`` (on the CPU: the input laid out for large GEMMs,
tinynorm/kernels/cpu/conv.py; on CUDA: im2col + GEMM). ``conv1d`` is ``conv2d`` on a height-1 image.
The checks here turn PyTorch's arguments (ints or tuples, ``padding='same'``/``'valid'``, unbatched
inputs) into the explicit geometry the backends take, with PyTorch's messages for bad input.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .. import dtypes
from .._checks import check_tensor
from ..autograd.function import Context, Function
from ..tensor import Tensor

IntPair = int | tuple[int, int]
Padding = int | Sequence[int] | str
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value: Any, size: int, name: str, op: str) -> tuple[int, ...]:
    """An int or a ``size``-sequence of ints as a ``size``-tuple (PyTorch's ``_pair``/``_single``)."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * size
    try:
        if len(items) != size or any(isinstance(item, bool) for item in items):
            raise TypeError
        return tuple(operator.index(item) for item in items)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {size} ints, got {value!r}") from None


def conv_padding(padding: Padding, kernel: Sequence[int], dilation: Sequence[int], stride: Sequence[int],
                 op: str) -> tuple[int, ...]:
    """Padding before and after each spatial dimension, ``(top, bottom, left, right)`` in 2-D: an int or
    tuple pads both sides alike; 'valid' is none; 'same' keeps the input size, the odd remainder going
    after (as PyTorch)."""
    if not isinstance(padding, str):
        pads = _tuple(padding, len(kernel), "padding", op)
        if min(pads) < 0:
            raise RuntimeError("negative padding is not supported")
        return tuple(p for pad in pads for p in (pad, pad))
    if padding == "valid":
        return (0,) * (2 * len(kernel))
    if padding != "same":
        raise ValueError(f"Invalid padding string {padding!r}, should be one of ['same', 'valid']")
    if any(s != 1 for s in stride):
        raise ValueError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    return tuple(p for total in totals for p in (total // 2, total - total // 2))


def _check_window(op: str, spatial: Sequence[int], kernel: Sequence[int], pads: Sequence[int],
                  dilation: Sequence[int]) -> None:
    """PyTorch's error when a (dilated) kernel does not fit in the padded input."""
    padded = [size + pads[2 * i] + pads[2 * i + 1] for i, size in enumerate(spatial)]
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(span > size for span, size in zip(spans, padded)):
        raise RuntimeError(f"{op}: calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, spans))}). "
                           "Kernel size can't be greater than actual input size")


def _backend_options(xp: Any, pads: tuple[int, int, int, int], dilation: tuple[int, int], groups: int,
                     padding_mode: str) -> dict[str, Any]:
    """The keyword arguments the device's ``conv2d_forward``/``conv2d_backward`` take for this geometry.

    The CPU kernels take every PyTorch option; the CUDA kernels symmetric zero padding only, so other
    geometries stop there with a clear error rather than a wrong result.
    """
    if xp.name == "cpu":
        return {"padding": pads, "dilation": dilation, "groups": groups, "padding_mode": padding_mode}
    unsupported = [text for text, bad in (
        (f"dilation={dilation}", dilation != (1, 1)), (f"groups={groups}", groups != 1),
        (f"asymmetric padding {pads} (top, bottom, left, right)", pads[0::2] != pads[1::2]),
        (f"padding_mode={padding_mode!r}", padding_mode != "zeros" and any(pads)),
    ) if bad]
    if unsupported:
        raise RuntimeError(f"conv2d on the {xp.name} device supports dilation=1, groups=1 and symmetric zero "
                           f"padding only; got {', '.join(unsupported)}. Run this convolution on the CPU.")
    return {"padding": (pads[0], pads[2])}


def _cast(array: Any, dtype: Any) -> Any:
    """``array`` in ``dtype``, copied only when it is not in it already (None stays None)."""
    return array if array is None or array.dtype == dtype else array.astype(dtype)


class Conv2d(Function):
    """2-D cross-correlation of x (N, C, H, W) with weight (O, C / groups, kh, kw), plus an optional bias.

    The kernels compute in float32 or float64; float16 tensors are convolved in float32 and the results
    rounded to float16 (as PyTorch's CPU convolution accumulates half precision in float32).
    """

    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, stride: tuple[int, int],
                pads: tuple[int, int, int, int], dilation: tuple[int, int], groups: int, padding_mode: str) -> Any:
        options = _backend_options(ctx.xp, pads, dilation, groups, padding_mode)
        ctx.dtype, compute = x.dtype, (dtypes.float32 if x.dtype == dtypes.float16 else x.dtype)
        y, saved = ctx.xp.conv2d_forward(_cast(x, compute), _cast(weight, compute), _cast(bias, compute),
                                         stride=stride, **options)
        ctx.save_for_backward(saved, weight)
        ctx.x_shape, ctx.stride, ctx.options = x.shape, stride, options
        return _cast(y, ctx.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        saved, weight = ctx.saved_tensors
        need_x, _, need_bias = ctx.needs_input_grad[:3]
        compute = saved.dtype
        dx, dweight, dbias = ctx.xp.conv2d_backward(_cast(grad, compute), saved, ctx.x_shape, _cast(weight, compute),
                                                    stride=ctx.stride, needs_input_grad=need_x,
                                                    needs_bias_grad=need_bias, **ctx.options)
        return _cast(dx, ctx.dtype), _cast(dweight, ctx.dtype), _cast(dbias, ctx.dtype)


def _check_conv_arguments(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int) -> None:
    """PyTorch's checks on the tensors of a convolution of ``x`` (batched, channels first)."""
    if weight.ndim != x.ndim:
        raise RuntimeError(f"{op}: expected a {x.ndim}-D weight (out_channels, in_channels / groups, *kernel_size) "
                           f"for a {x.ndim}-D input, got weight of size {list(weight.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups!r}")
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    if weight.shape[1] * groups != x.shape[1]:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           "channels instead")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    if x.dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}: input of dtype {x.dtype} is not supported: convolutions take float16, float32 or "
                           "float64 tensors; convert the input with x.float() (and the layer with layer.float())")
    for name, other in (("weight", weight), ("bias", bias)):
        if other is not None and other.dtype != x.dtype:
            raise RuntimeError(f"{op}: input type ({x.dtype}) and {name} type ({other.dtype}) should be the same: "
                               "convert the input (x.float(), x.double()) or the layer (layer.to(x.dtype))")


def _convolution(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Padding,
                 dilation: Any, groups: int, padding_mode: str, spatial_dims: int) -> Tensor:
    """Shared by conv1d and conv2d: validate like PyTorch, then run :class:`Conv2d` on a batched 2-D view."""
    check_tensor(op, "input", x)
    check_tensor(op, "weight", weight)
    if bias is not None:
        check_tensor(op, "bias", bias)
    if x.ndim not in (spatial_dims + 1, spatial_dims + 2):
        raise RuntimeError(f"Expected {spatial_dims + 1}D (unbatched) or {spatial_dims + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(x.shape)}")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {list(PADDING_MODES)}, but got padding_mode={padding_mode!r}")
    unbatched = x.ndim == spatial_dims + 1
    if unbatched:
        x = x.unsqueeze(0)
    _check_conv_arguments(op, x, weight, bias, groups)
    strides = _tuple(stride, spatial_dims, "stride", op)
    dilations = _tuple(dilation, spatial_dims, "dilation", op)
    if min(strides) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilations) < 1:
        raise RuntimeError("dilation should be greater than zero")
    kernel = tuple(weight.shape[2:])
    pads = conv_padding(padding, kernel, dilations, strides, op)
    _check_window(op, x.shape[2:], kernel, pads, dilations)
    if spatial_dims == 1:  # a height-1 image: (N, C, 1, L) by (O, C / groups, 1, k)
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        strides, dilations, pads = (1, *strides), (1, *dilations), (0, 0, *pads)
    y = Conv2d.apply(x, weight, bias, strides, pads, dilations, groups, padding_mode)
    if spatial_dims == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntPair = 1, padding: Padding = 0,
           dilation: IntPair = 1, groups: int = 1) -> Tensor:
    """Cross-correlation of ``x`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C / groups, kh, kw), as
    ``F.conv2d``: ``padding`` an int, a pair, 'same' or 'valid'; ``groups`` splits the channels into
    independent convolutions."""
    return _convolution("conv2d", x, weight, bias, stride, padding, dilation, groups, "zeros", 2)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: Padding = 0,
           dilation: int = 1, groups: int = 1) -> Tensor:
    """Cross-correlation of ``x`` (N, C, L) or (C, L) with ``weight`` (O, C / groups, k), as ``F.conv1d``."""
    return _convolution("conv1d", x, weight, bias, stride, padding, dilation, groups, "zeros", 1)


def padded_convolution(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Padding, dilation: Any,
                       groups: int, padding_mode: str) -> Tensor:
    """What ``nn.Conv1d``/``nn.Conv2d`` compute: the convolution with ``padding_mode`` 'zeros', 'reflect',
    'replicate' or 'circular' filling the padding (PyTorch pads explicitly, then convolves)."""
    spatial_dims = weight.ndim - 2
    return _convolution(f"conv{spatial_dims}d", x, weight, bias, stride, padding, dilation, groups, padding_mode,
                        spatial_dims)
