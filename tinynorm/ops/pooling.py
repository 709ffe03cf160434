"""Max, average and adaptive pooling over 1, 2 or 3 spatial dims, with PyTorch's options and errors.

Two paths compute the same numbers:

- The fused kernels (``kernels/cpu/pool.py``, ``kernels/cuda/pool.py``) run the common case: 1-d or
  2-d windows of equal size without dilation, rounding the output size down, and (average) dividing by
  the full window, padding included. A 1-d pool is a 2-d one over a height of 1.
- Every other case gathers the windows: the positions each output reads are planned on the host once
  per geometry (dilation, ``ceil_mode`` windows that hang over the edge, ``count_include_pad=False``,
  ``divisor_override``, adaptive windows of varying size, 3-d), and the pool is then indexing plus a
  sum or an argmax, differentiable ops that run on both devices. Each window lists its positions in
  the input plane; a position past its padding reads an extra element appended to the plane (-inf for
  max, 0 for average). Max pooling sends the gradient to the first maximum of each window, as the
  kernels and PyTorch do, and returns PyTorch's indices (flat positions in the input plane).
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .shape import cat

Size = int | tuple[int, ...]


# ----------------------------------------------------------------------------- the fused kernels
class MaxPool2d(Function):
    backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel_size: tuple, stride: tuple, padding: tuple) -> Any:
        y, argmax = ctx.xp.max_pool2d_forward(x, kernel_size, stride, padding)
        ctx.save_for_backward(argmax)
        ctx.x_shape = x.shape
        return y

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (argmax,) = ctx.saved_tensors
        return ctx.xp.max_pool2d_backward(grad, argmax, ctx.x_shape, checked=True)  # the forward's own argmax


class AvgPool2d(Function):
    backward_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel_size: tuple, stride: tuple, padding: tuple) -> Any:
        ctx.x_shape, ctx.geometry = x.shape, (kernel_size, stride, padding)
        return ctx.xp.avg_pool2d_forward(x, kernel_size, stride, padding)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.avg_pool2d_backward(grad, ctx.x_shape, *ctx.geometry)


# ----------------------------------------------------------------------------- arguments
def _sizes(value: Any, dims: int, name: str, op: str, omitted: Any = None) -> tuple[int, ...]:
    """An int or a tuple of ``dims`` ints (or one), as a tuple of ``dims`` ints; PyTorch's errors."""
    if value is None or (omitted is not None and isinstance(value, (tuple, list)) and len(value) == 0):
        return omitted
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    try:
        items = tuple(operator.index(v) for v in items)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}") from None
    if len(items) == 1:
        return items * dims
    if len(items) != dims:
        ints = {1: "one int", 2: "two ints", 3: "three ints"}[dims]
        omit = "be omitted, " if name == "stride" else ""
        raise RuntimeError(f"{op}: {name} must either {omit}a single int, or a tuple of {ints}")
    return items


def _batched(x: Tensor, dims: int, op: str) -> tuple[Tensor, bool]:
    """``x`` (N, C, *spatial) or (C, *spatial) as a batched tensor, and whether it was unbatched."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got: {list(x.shape)}")
    if any(n == 0 for n in x.shape[-dims - 1:]):
        raise RuntimeError(f"{op}: Expected input to have non-zero size for non-batch dimensions, but got "
                           f"{list(x.shape)}")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"{op}: tinynorm pools floating-point tensors only, got dtype {x.dtype}")
    return (x, False) if x.ndim == dims + 2 else (x.unsqueeze(0), True)


def _output_length(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's pooled length: windows that start inside the input or its left padding."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * pad - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _check_geometry(spatial: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                    ceil_mode: bool, channels: int) -> tuple[int, ...]:
    """The output's spatial shape, after PyTorch's checks of the window arguments."""
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got {kernel}")
    if min(stride) <= 0:
        raise RuntimeError("stride should not be zero")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {dilation}")
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    out = tuple(_output_length(*args, ceil_mode) for args in zip(spatial, kernel, stride, padding, dilation))
    if min(out) < 1:
        given = "x".join(str(n) for n in (channels,) + tuple(spatial))
        calculated = "x".join(str(n) for n in (channels,) + out)
        raise RuntimeError(f"Given input size: ({given}). Calculated output size: ({calculated}). Output size "
                           "is too small")
    return out


# ----------------------------------------------------------------------------- window plans
@functools.lru_cache(maxsize=256)
def _sliding_plan(spatial: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                  ceil_mode: bool, out: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (OUT, K) read by each window of a sliding pool (the plane's size marking padding), and
    each window's element count with and without its padding (what average pooling divides by)."""
    axes = []
    for size, k, s, p, d, n in zip(spatial, kernel, stride, padding, dilation, out):
        start = np.arange(n) * s - p
        positions = start[:, None] + np.arange(k)[None, :] * d
        with_pad = np.minimum(start + k, size + p) - start
        without_pad = np.minimum(start + k, size) - np.maximum(start, 0)
        axes.append((positions, (positions >= 0) & (positions < size), with_pad, without_pad))
    return _combine(spatial, axes)


@functools.lru_cache(maxsize=256)
def _adaptive_plan(spatial: tuple, out: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows of adaptive pooling: output o of n along an input of size L covers positions
    floor(o L / n) to ceil((o + 1) L / n) - 1 (windows of different sizes when n does not divide L)."""
    axes = []
    for size, n in zip(spatial, out):
        o = np.arange(n)
        start, stop = (o * size) // n, -((-(o + 1) * size) // n)
        positions = start[:, None] + np.arange(int((stop - start).max()))[None, :]
        count = stop - start
        axes.append((positions, positions < stop[:, None], count, count))
    return _combine(spatial, axes)


def _combine(spatial: tuple, axes: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-axis windows (positions, valid, counts) as flat plane positions of the n-d windows, the
    valid ones first in each window (so the first maximum is the first valid one in row-major order)."""
    dims = len(axes)
    flat, valid = 0, True
    plane_stride = 1
    with_pad, without_pad = 1, 1
    for axis in reversed(range(dims)):
        positions, ok, count_with, count_without = axes[axis]
        # The output index of this axis goes to dim `axis`, the kernel index to dim `dims + axis`.
        shape = [1] * (2 * dims)
        shape[axis], shape[dims + axis] = positions.shape
        flat = flat + positions.reshape(shape) * plane_stride
        valid = valid & ok.reshape(shape)
        count_shape = [1] * dims
        count_shape[axis] = len(count_with)
        with_pad = with_pad * count_with.reshape(count_shape)
        without_pad = without_pad * count_without.reshape(count_shape)
        plane_stride *= spatial[axis]
    flat, valid = np.broadcast_arrays(flat, valid)
    outputs = int(np.prod(flat.shape[:dims]))
    flat, valid = flat.reshape(outputs, -1), valid.reshape(outputs, -1)
    order = np.argsort(~valid, axis=1, kind="stable")
    index = np.where(np.take_along_axis(valid, order, 1), np.take_along_axis(flat, order, 1), plane_stride)
    return index.astype(np.int64), np.asarray(with_pad).reshape(-1), np.asarray(without_pad).reshape(-1)


def _windows(x: Tensor, index: np.ndarray, fill: float) -> Tensor:
    """(N, C, OUT, K) windows of ``x`` (N, C, *spatial): the plane flattened, ``fill`` appended as the
    padding element, read at ``index``."""
    flat = x.flatten(2)
    padding = Tensor._from_array(x._backend.full(flat.shape[:2] + (1,), fill, dtype=x.dtype), x.device)
    return cat([flat, padding], dim=2)[:, :, x._backend.from_numpy(index)]


def _gathered_max(x: Tensor, index: np.ndarray, out: tuple) -> tuple[Tensor, Tensor]:
    """The maximum of each window and its flat position in the input plane (the first one on ties; a
    NaN wins), with the gradient going to that position."""
    xp = x._backend
    with_padding = _windows(x.detach(), index, -math.inf).array
    first = xp.argmax(with_padding, axis=3)  # (N, C, OUT)
    k = index.shape[1]
    positions = xp.take(xp.from_numpy(index.reshape(-1)), xp.arange(index.shape[0]) * k + first)
    n, c = x.shape[:2]
    rows = xp.from_numpy(np.arange(n).reshape(n, 1, 1)), xp.from_numpy(np.arange(c).reshape(1, c, 1))
    values = x.flatten(2)[rows + (positions,)]
    shape = (n, c) + out
    return values.reshape(shape), Tensor._from_array(positions.reshape(shape), x.device)


def _gathered_mean(x: Tensor, index: np.ndarray, divisors: np.ndarray, out: tuple) -> Tensor:
    sums = _windows(x, index, 0.0).sum(3)
    scale = Tensor._from_array(x._backend.from_numpy((1.0 / divisors).astype(x.dtype)), x.device)
    return (sums * scale).reshape(tuple(x.shape[:2]) + out)


# ----------------------------------------------------------------------------- max and average pooling
def _max_pool(input: Tensor, dims: int, kernel_size: Size, stride: Size | None, padding: Size, dilation: Size,
              ceil_mode: bool, return_indices: bool) -> Any:
    op = f"max_pool{dims}d"
    kernel = _sizes(kernel_size, dims, "kernel_size", op)
    stride = _sizes(stride, dims, "stride", op, omitted=kernel)
    padding, dilation = _sizes(padding, dims, "padding", op), _sizes(dilation, dims, "dilation", op)
    x, unbatched = _batched(input, dims, op)
    spatial = tuple(x.shape[2:])
    out = _check_geometry(spatial, kernel, stride, padding, dilation, ceil_mode, x.shape[1])
    if any(p > k // 2 for p, k in zip(padding, kernel)):  # PyTorch's check whenever a gradient is wanted
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padding "
                           f"{padding} for kernel_size {kernel}")
    if dims <= 2 and not return_indices and not ceil_mode and set(dilation) == {1}:
        values, indices = _as_2d(x, dims, MaxPool2d.apply, kernel, stride, padding), None
    else:
        plan = _sliding_plan(spatial, kernel, stride, padding, dilation, ceil_mode, out)
        values, indices = _gathered_max(x, plan[0], out)
    if unbatched:
        values, indices = values.squeeze(0), (indices.squeeze(0) if indices is not None else None)
    return (values, indices) if return_indices else values


def _as_2d(x: Tensor, dims: int, pool: Any, kernel: tuple, stride: tuple, padding: tuple) -> Tensor:
    """A 2-d kernel ``pool`` over ``x``; a 1-d input runs as a plane of height 1."""
    if dims == 2:
        return pool(x, kernel, stride, padding)
    return pool(x.unsqueeze(2), (1,) + kernel, (1,) + stride, (0,) + padding).squeeze(2)


def _avg_pool(input: Tensor, dims: int, kernel_size: Size, stride: Size | None, padding: Size, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    op = f"avg_pool{dims}d"
    kernel = _sizes(kernel_size, dims, "kernel_size", op)
    stride = _sizes(stride, dims, "stride", op, omitted=kernel)
    padding = _sizes(padding, dims, "padding", op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, unbatched = _batched(input, dims, op)
    spatial = tuple(x.shape[2:])
    out = _check_geometry(spatial, kernel, stride, padding, (1,) * dims, ceil_mode, x.shape[1])
    if dims <= 2 and not ceil_mode and count_include_pad and divisor_override is None:
        result = _as_2d(x, dims, AvgPool2d.apply, kernel, stride, padding)
    else:
        index, with_pad, without_pad = _sliding_plan(spatial, kernel, stride, padding, (1,) * dims, ceil_mode, out)
        divisors = np.full(index.shape[0], divisor_override) if divisor_override else (
            with_pad if count_include_pad else without_pad)
        result = _gathered_mean(x, index, divisors, out)
    return result.squeeze(0) if unbatched else result


def max_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of (N, C, L) or (C, L) input; stride defaults to ``kernel_size``."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of (N, C, H, W) or (C, H, W) input; the first maximum gets the gradient."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0, dilation: Size = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of (N, C, L) or (C, L) input (padded zeros counted unless ``count_include_pad=False``)."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over windows of (N, C, H, W) or (C, H, W) input; ``divisor_override`` replaces the window size."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


# ----------------------------------------------------------------------------- adaptive pooling
def _adaptive_size(output_size: Any, spatial: tuple, op: str) -> tuple[int, ...]:
    """``output_size`` (an int, or a tuple whose None entries keep the input's size) as a tuple."""
    dims = len(spatial)
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * dims
    if len(items) != dims:
        raise RuntimeError(f"{op}: output_size must be {dims}")
    sizes = tuple(size if item is None else operator.index(item) for item, size in zip(items, spatial))
    if min(sizes) < 0:
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(sizes)}")
    return sizes


def _adaptive(input: Tensor, dims: int, output_size: Any, largest: bool, return_indices: bool) -> Any:
    op = f"adaptive_{'max' if largest else 'avg'}_pool{dims}d"
    if not isinstance(input, Tensor) or input.ndim not in (dims + 1, dims + 2):
        shape = list(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got {shape}")
    x, unbatched = _batched(input, dims, op)
    spatial = tuple(x.shape[2:])
    out = _adaptive_size(output_size, spatial, op)
    if min(out) == 0:  # nothing to pool: an empty result that is still part of the graph
        values = x.flatten(2)[:, :, :0].reshape(tuple(x.shape[:2]) + out)
        indices = Tensor._from_array(x._backend.zeros(values.shape, dtype=np.int64), x.device)
    elif not largest and set(out) == {1}:  # global average pooling
        values, indices = x.mean(dim=tuple(range(2, x.ndim)), keepdim=True), None
    elif all(size % n == 0 for size, n in zip(spatial, out)) and dims <= 2 and not return_indices:
        # Equal windows tile the input: the plain pool with kernel = stride = size / output is the same.
        kernel = tuple(size // n for size, n in zip(spatial, out))
        pool = MaxPool2d.apply if largest else AvgPool2d.apply
        values, indices = _as_2d(x, dims, pool, kernel, kernel, (0,) * dims), None
    else:
        index, counts, _ = _adaptive_plan(spatial, out)
        if largest:
            values, indices = _gathered_max(x, index, out)
        else:
            values, indices = _gathered_mean(x, index, counts, out), None
    if unbatched:
        values, indices = values.squeeze(0), (indices.squeeze(0) if indices is not None else None)
    return (values, indices) if return_indices else values


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    return _adaptive(input, 1, output_size, False, False)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to ``output_size`` (windows of near-equal size covering the input, as PyTorch's)."""
    return _adaptive(input, 2, output_size, False, False)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    return _adaptive(input, 3, output_size, False, False)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive(input, 1, output_size, True, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive(input, 2, output_size, True, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive(input, 3, output_size, True, return_indices)
