"""2-D convolution on NCHW numpy arrays (PyTorch's cross-correlation, with stride, padding, dilation and
groups), on the input's *grid* layout of ``conv_grid.py``: zero padded and split into stride phases, so
that every kernel tap reads one contiguous run of it.

Three ways through the grid, chosen by measurement (float32, 2-core AMD EPYC with AVX-512, numbers in
docs/benchmarks.md):

- float32 without groups, weight rows (C * kh * kw) of at least MIN_IMPLICIT_ROW values:
  ``conv_implicit.py``'s register-blocked kernels read the runs straight from the grid, for the forward
  and both gradients (85-95 GFLOP/s per core on the products, no column matrix).
- float32 without groups on shorter weight rows (a first layer's on a few channels: up to seven for
  3x3): the same kernels for the forward, in blocks of output rows, each written out as contiguous
  runs (``by_rows``); their backward takes the GEMM path below.
- the others (float64, groups, and short rows' backward): one OpenBLAS GEMM per chunk,
  ``weight (O, C*kh*kw) @ cols (C*kh*kw, samples * OH * OW)``. ``cols`` is built from the grid by
  copying contiguous rows of runs, in chunks of samples whose ``cols`` fit in the L2 cache (1 MiB);
  the backward rebuilds each chunk's ``cols`` from the saved grid instead of keeping a 9x copy of the
  input alive. Its two GEMMs per chunk give ``dweight^T += cols @ dy_grid^T`` and ``dcols = weight^T @
  dy_grid``, folded back onto the grid by run additions (col2im) and onto the input by the adjoint of
  the grid split. ``dweight`` is computed transposed because OpenBLAS threads a long-K product with few
  rows badly: ``dy_grid @ cols^T`` costs several times the CPU time of ``cols @ dy_grid^T``.

Every way, the threads share the batch: each of tinynorm's threads takes its own samples through every
step with BLAS at one thread (``blas_pool.py``), and the backward adds the threads' ``dweight`` parts
in a fixed order. Threading every GEMM instead hands work to OpenBLAS's pool and back once per chunk,
and its idle threads spin beside the layout kernels; that ran the SmallCNN's convolutions at about the
speed of one thread. A convolution too small to give each thread MIN_MULTIPLY_ADDS_PER_THREAD runs on
fewer threads. 1x1 convolutions with stride 1 and no padding skip the grid: ``weight @ x[n]`` per sample.

``padding_mode`` 'reflect', 'replicate' and 'circular' pad the input explicitly first (as PyTorch does);
the zero padding of the grid is then 0. ``im2col``/``col2im`` give the classic (N, C*kh*kw, OH*OW)
column layout, for reference and for the CUDA kernels' tests.

The helpers ``_window_geometry``, ``check_nchw`` and ``_check_shape`` are shared with ``pool.py`` and
the CUDA kernels.
"""
from __future__ import annotations

import functools
import math
import operator
import threading
from typing import Any, NamedTuple

import numba
import numpy as np

from . import blas_pool, conv_implicit
from .conv_grid import GridPlan, add_grid_columns, empty_grid, from_grid, grid_columns, output_grads, outputs, to_grid

IntPair = int | tuple[int, int]
Padding = IntPair | tuple[int, int, int, int]

_FLOAT_DTYPES = (np.float32, np.float64)
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
# Elements of ``cols`` per chunk of samples (see the module docstring): 256K float32 values, 1 MiB, about
# half of a core's L2 cache.
CHUNK_ELEMENTS = 1 << 18
# Work arrays up to this many elements are kept for reuse between calls (see _scratch): a chunk's.
SCRATCH_LIMIT = CHUNK_ELEMENTS
# Multiply-adds a thread should have before a convolution is shared out (see _sample_ranges).
MIN_MULTIPLY_ADDS_PER_THREAD = 1 << 22
# Weight row length (C * kh * kw) from which conv_implicit's kernels run (see _is_implicit).
MIN_IMPLICIT_ROW = 64


def _pair(value: IntPair, name: str, minimum: int) -> tuple[int, int]:
    """Return ``value`` as ``(height, width)`` ints, accepting an int or a pair like PyTorch."""
    items = value if isinstance(value, (tuple, list)) else (value, value)
    try:
        if len(items) != 2 or any(isinstance(item, bool) for item in items):
            raise TypeError
        pair = (operator.index(items[0]), operator.index(items[1]))
    except TypeError:
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}") from None
    if min(pair) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return pair


def check_nchw(name: str, x: object) -> np.ndarray:
    """``x`` C-contiguous after checking it is a float32/float64 NCHW numpy array."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"{name} must be 4-D (N, C, H, W), got shape {x.shape}")
    if x.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32 or float64, got {x.dtype}")
    return np.ascontiguousarray(x)


def _window_geometry(
    h: int, w: int, kernel_size: IntPair, stride: IntPair, padding: IntPair
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Validate a sliding window over an ``h x w`` input; return kernel, stride, padding and output size pairs."""
    kernel = _pair(kernel_size, "kernel_size", 1)
    geometry = conv2d_geometry((1, 1, h, w), (1, 1, *kernel), stride, _pair(padding, "padding", 0))
    return geometry.kernel, geometry.stride, geometry.padding[::2], geometry.out_size


def _check_shape(shape: tuple[int, ...], name: str) -> tuple[int, int, int, int]:
    """Check that ``shape`` names an NCHW shape and return it as a tuple."""
    if len(shape) != 4:
        raise ValueError(f"{name} must be (N, C, H, W), got {shape}")
    if not all(isinstance(size, (int, np.integer)) and not isinstance(size, bool) for size in shape):
        raise TypeError(f"{name} must be 4 ints (N, C, H, W), got {shape}")
    return tuple(int(size) for size in shape)


# ------------------------------------------------------------ geometry
class ConvGeometry(NamedTuple):
    """A convolution's window, all pairs (height, width); ``padding`` is (top, bottom, left, right)."""
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    groups: int
    out_size: tuple[int, int]


def _padding(padding: Padding) -> tuple[int, int, int, int]:
    """``padding`` (an int, a pair, or already (top, bottom, left, right)) as (top, bottom, left, right)."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        pads = _pair(padding[:2], "padding", 0) + _pair(padding[2:], "padding", 0)
        return pads  # type: ignore[return-value]
    (ph, pw) = _pair(padding, "padding", 0)
    return (ph, ph, pw, pw)


def conv2d_geometry(x_shape: tuple[int, ...], weight_shape: tuple[int, ...], stride: IntPair = 1,
                    padding: Padding = 0, dilation: IntPair = 1, groups: int = 1) -> ConvGeometry:
    """Validate a convolution of an NCHW input by an (O, C / groups, kh, kw) weight; return its geometry."""
    kernel = _pair(tuple(weight_shape[2:]), "kernel_size", 1)
    strides = _pair(stride, "stride", 1)
    dilations = _pair(dilation, "dilation", 1)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    pads = _padding(padding)
    padded = (x_shape[2] + pads[0] + pads[1], x_shape[3] + pads[2] + pads[3])
    span = tuple(d * (k - 1) + 1 for d, k in zip(dilations, kernel))
    if span[0] > padded[0] or span[1] > padded[1]:
        spanned = "" if dilations == (1, 1) else f" with dilation {dilations} spans {span} and"
        sides = pads[::2] if pads[::2] == pads[1::2] else f"{pads} (top, bottom, left, right)"
        raise ValueError(f"kernel_size {kernel}{spanned} is larger than the padded input {padded} "
                         f"(input {tuple(x_shape[2:])}, padding {sides})")
    out_size = tuple((p - s) // st + 1 for p, s, st in zip(padded, span, strides))
    return ConvGeometry(kernel, strides, pads, dilations, int(groups), out_size)  # type: ignore[arg-type]


def conv2d_output_size(h: int, w: int, kernel_size: IntPair, stride: IntPair, padding: Padding,
                       dilation: IntPair = 1) -> tuple[int, int]:
    """Output height and width of a convolution or pooling window sliding over an ``h x w`` input."""
    kernel = _pair(kernel_size, "kernel_size", 1)
    return conv2d_geometry((1, 1, h, w), (1, 1, *kernel), stride, padding, dilation).out_size


@functools.lru_cache(maxsize=64)
def _grid_plan(h: int, w: int, geometry: ConvGeometry) -> GridPlan:
    """Where an ``h x w`` input lands in the grid and where each tap reads it (conv_grid.py)."""
    (kh, kw), (sh, sw), (pt, pb, pl, pr), (dh, dw) = geometry[:4]
    out_h = geometry.out_size[0]
    wq = -(-(w + pl + pr) // sw)
    taps = [(i * dh, j * dw) for i in range(kh) for j in range(kw)]
    tap_phase = np.array([(a % sh) * sw + b % sw for a, b in taps], dtype=np.int64)
    tap_offset = np.array([(a // sh) * wq + b // sw for a, b in taps], dtype=np.int64)
    rows = -(-(h + pt + pb) // sh)
    # Room for the last tap's last row, in whole blocks of positions for conv_implicit's kernels (of wide
    # positions, or of output rows).
    wide = conv_implicit.padded(out_h * wq, conv_implicit.LANES)
    last_row_end = (out_h - 1) * wq + conv_implicit.padded(geometry.out_size[1], conv_implicit.LANES)
    plane_size = max(rows * wq, int(tap_offset.max()) + max(wide, last_row_end))
    wide_pixel = np.full(wide, -1, dtype=np.int64)
    oh, ow = np.divmod(np.arange(out_h * wq), wq)
    kept = ow < geometry.out_size[1]
    wide_pixel[:out_h * wq][kept] = oh[kept] * geometry.out_size[1] + ow[kept]
    return GridPlan(pt, pl, (sh, sw), wq, plane_size, geometry.out_size, tap_phase, tap_offset, wide_pixel)


def _is_implicit(dtype: np.dtype, groups: int, weight_row: int) -> bool:
    """float32 convolutions without groups whose weight rows (C * kh * kw) have MIN_IMPLICIT_ROW values
    run conv_implicit's register-blocked kernels both ways; the others the GEMM on ``cols`` (float64,
    whose blocks would not fit the registers; grouped ones; and the backward of short rows, such as a
    first layer's on one or three channels, where the blocks are mostly filled and emptied; their
    forward runs by rows, :func:`_is_forward_by_rows`)."""
    return dtype == np.float32 and groups == 1 and weight_row >= MIN_IMPLICIT_ROW


def _is_forward_by_rows(dtype: np.dtype, groups: int, weight_row: int) -> bool:
    """float32 forwards without groups on short weight rows run conv_implicit's kernel in blocks of output
    rows: their blocks gain only a few products each, and a block of rows goes out in contiguous runs
    (measured: docs/benchmarks.md). Their backward stays on the GEMM path."""
    return dtype == np.float32 and groups == 1 and weight_row < MIN_IMPLICIT_ROW


def _is_pointwise(geometry: ConvGeometry) -> bool:
    """A 1x1 kernel, stride 1, no padding: each output pixel is ``weight @`` its input pixel."""
    return geometry.kernel == (1, 1) and geometry.stride == (1, 1) and geometry.padding == (0, 0, 0, 0)


# ------------------------------------------------------------ padding modes other than zeros
def _padding_index(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """For each padded position along one axis, the input position it copies."""
    index = np.arange(-before, size + after)
    if mode == "reflect":  # mirrored at the first and last position, which are not repeated
        index = np.abs(index)
        return np.where(index >= size, 2 * (size - 1) - index, index)
    if mode == "replicate":
        return np.clip(index, 0, size - 1)
    return index % size  # circular


def _check_mode_padding(x_shape: tuple[int, ...], pads: tuple[int, int, int, int], mode: str) -> None:
    """PyTorch's limits: reflect needs padding < size, circular padding <= size."""
    for axis, before, after in ((2, pads[0], pads[1]), (3, pads[2], pads[3])):
        size = x_shape[axis]
        if (mode == "reflect" and max(before, after) >= size) or (mode == "circular" and max(before, after) > size):
            limit = "less than" if mode == "reflect" else "at most"
            raise ValueError(f"padding_mode={mode!r}: padding ({before}, {after}) of dimension {axis} must be {limit} "
                             f"its size {size} (input shape {tuple(x_shape)})")


def _pad_with_mode(x: np.ndarray, pads: tuple[int, int, int, int], mode: str) -> np.ndarray:
    rows = _padding_index(x.shape[2], pads[0], pads[1], mode)
    cols = _padding_index(x.shape[3], pads[2], pads[3], mode)
    return np.ascontiguousarray(x[:, :, rows][:, :, :, cols])


def _unpad_with_mode(dx_padded: np.ndarray, x_shape: tuple[int, ...], pads: tuple[int, int, int, int],
                     mode: str) -> np.ndarray:
    """Adjoint of :func:`_pad_with_mode`: every padded position's gradient goes to the input it copies."""
    rows = _padding_index(x_shape[2], pads[0], pads[1], mode)
    cols = _padding_index(x_shape[3], pads[2], pads[3], mode)
    by_column = np.zeros((*dx_padded.shape[:3], x_shape[3]), dtype=dx_padded.dtype)
    np.add.at(by_column, (slice(None), slice(None), slice(None), cols), dx_padded)
    dx = np.zeros(x_shape, dtype=dx_padded.dtype)
    np.add.at(dx, (slice(None), slice(None), rows), by_column)
    return dx


# ------------------------------------------------------------ forward and backward
def _check_weight(weight: np.ndarray, x_channels: int, dtype: np.dtype, groups: int) -> np.ndarray:
    """Check a conv weight (O, C / groups, kh, kw) against the input's channel count, groups and dtype."""
    weight = check_nchw("weight", weight)
    if weight.shape[0] < groups:
        raise ValueError(f"weight must have at least groups={groups} output channels, got shape {weight.shape}")
    if weight.shape[1] * groups != x_channels:
        raise ValueError(
            f"weight expects {weight.shape[1] * groups} input channels (shape {weight.shape}"
            f"{'' if groups == 1 else f', groups={groups}'}), "
            f"but the input has {x_channels} channels"
        )
    if weight.shape[0] % groups:
        raise ValueError(f"weight has {weight.shape[0]} output channels, not divisible by groups={groups}")
    if weight.dtype != dtype:
        raise TypeError(f"weight dtype {weight.dtype} does not match the input dtype {dtype}")
    return weight


def _check_mode(padding_mode: str) -> str:
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {list(PADDING_MODES)}, but got padding_mode={padding_mode!r}")
    return padding_mode


class _Prepared(NamedTuple):
    """The grid's view of a convolution: the (explicitly mode-padded) input shape and its plan."""
    geometry: ConvGeometry
    grid_geometry: ConvGeometry  # the same window, with padding 0 after a mode padding
    input_shape: tuple[int, int, int, int]  # the shape the grid (or the pointwise GEMM) sees


def _is_plain(values: tuple) -> bool:
    """Whether every value is an int or a tuple of ints (not a bool, a float, a list or a numpy integer)."""
    return all(type(v) is int or (type(v) is tuple and all(type(i) is int for i in v)) for v in values)


def _prepare(x_shape: tuple[int, ...], weight_shape: tuple[int, ...], stride: IntPair, padding: Padding,
             dilation: IntPair, groups: int, padding_mode: str) -> _Prepared:
    """The convolution's :class:`_Prepared` geometry, checked. Cached for plain ints and tuples of ints
    (as the ops pass them; a few microseconds a call saved): other arguments, which could compare equal
    to valid ones (``True == 1``), are checked afresh."""
    arguments = (tuple(x_shape), tuple(weight_shape), stride, padding, dilation, groups, padding_mode)
    if _is_plain(arguments[:6]) and type(padding_mode) is str:
        return _prepare_cached(*arguments)
    return _prepare_checked(*arguments)


def _prepare_checked(x_shape: tuple[int, ...], weight_shape: tuple[int, ...], stride: IntPair, padding: Padding,
                     dilation: IntPair, groups: int, padding_mode: str) -> _Prepared:
    geometry = conv2d_geometry(x_shape, weight_shape, stride, padding, dilation, groups)
    if _check_mode(padding_mode) == "zeros" or geometry.padding == (0, 0, 0, 0):
        return _Prepared(geometry, geometry, tuple(x_shape))  # type: ignore[arg-type]
    _check_mode_padding(x_shape, geometry.padding, padding_mode)
    pt, pb, pl, pr = geometry.padding
    padded_shape = (x_shape[0], x_shape[1], x_shape[2] + pt + pb, x_shape[3] + pl + pr)
    return _Prepared(geometry, geometry._replace(padding=(0, 0, 0, 0)), padded_shape)


_prepare_cached = functools.lru_cache(maxsize=256)(_prepare_checked)


def _sample_ranges(samples: int, multiply_adds: int) -> list[tuple[int, int]]:
    """The samples of each thread, ``[start, stop)``: one range per thread of tinynorm's thread count, as
    many as have MIN_MULTIPLY_ADDS_PER_THREAD of the convolution's ``multiply_adds`` (at least one, none
    for an empty batch)."""
    if samples == 0:
        return []
    threads = min(numba.get_num_threads(), samples, max(1, multiply_adds // MIN_MULTIPLY_ADDS_PER_THREAD))
    bounds = [samples * i // threads for i in range(threads + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _chunks(start: int, stop: int, per_sample: int) -> range:
    """First sample of each chunk of ``[start, stop)`` whose ``cols`` hold about CHUNK_ELEMENTS values (at
    least one sample)."""
    return range(start, stop, max(1, CHUNK_ELEMENTS // per_sample))


_scratch_buffers = threading.local()


def _scratch(name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A C-contiguous work array of ``shape``, reused from call to call (one per thread, name and dtype).

    A fresh buffer of 1 MiB costs its page faults on every call, which makes filling a chunk's ``cols``
    several times slower on a virtual machine (measured: docs/benchmarks.md). Arrays above
    SCRATCH_LIMIT (a chunk of one sample of a large image) are allocated afresh, so no thread keeps more
    than a chunk's ``cols`` and GEMM product alive (at most 2 MiB of float32).
    """
    size = math.prod(shape)
    if size > SCRATCH_LIMIT:
        return np.empty(shape, dtype=dtype)
    buffers = getattr(_scratch_buffers, "by_name", None)
    if buffers is None:
        buffers = _scratch_buffers.by_name = {}
    buffer = buffers.get((name, dtype))
    if buffer is None or buffer.size < size:
        buffer = buffers[(name, dtype)] = np.empty(size, dtype=dtype)
    return buffer[:size].reshape(shape)


def _grouped(matrix: np.ndarray, groups: int) -> np.ndarray:
    """(rows, cols) to (groups, rows / groups, cols): the block of each group of channels."""
    return matrix.reshape(groups, matrix.shape[0] // groups, matrix.shape[1])


def conv2d_forward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    stride: IntPair = 1,
    padding: Padding = 0,
    dilation: IntPair = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
) -> tuple[np.ndarray, np.ndarray]:
    """Convolution of NCHW ``x`` with ``weight`` (O, C / groups, kh, kw) plus optional ``bias`` (O,).

    ``padding``: an int, a pair or (top, bottom, left, right). Returns ``(y, saved)``:
    ``y`` of shape (N, O, OH, OW), and what :func:`conv2d_backward` needs (the input's grid).
    """
    x = check_nchw("x", x)
    weight = _check_weight(weight, x.shape[1], x.dtype, groups)
    out_channels = weight.shape[0]
    if bias is None:
        bias = np.zeros(out_channels, dtype=x.dtype)
    elif not isinstance(bias, np.ndarray) or bias.shape != (out_channels,):
        raise ValueError(f"bias must be an array of shape ({out_channels},), got {getattr(bias, 'shape', bias)}")
    elif bias.dtype != x.dtype:
        raise TypeError(f"bias dtype {bias.dtype} does not match the input dtype {x.dtype}")
    prepared = _prepare(x.shape, weight.shape, stride, padding, dilation, groups, padding_mode)
    if prepared.input_shape != x.shape:
        x = _pad_with_mode(x, prepared.geometry.padding, padding_mode)
    geometry = prepared.grid_geometry
    weights = _grouped(weight.reshape(out_channels, -1), groups)  # (groups, O / groups, C / groups * kh * kw)
    y_shape = (x.shape[0], out_channels, *geometry.out_size)
    if _is_pointwise(geometry):
        n, c, h, w = x.shape
        product = np.matmul(weights, x.reshape(n, groups, c // groups, h * w))  # (N, groups, O / groups, H*W)
        return np.add(product.reshape(y_shape), bias[:, None, None]), x
    plan = _grid_plan(x.shape[2], x.shape[3], geometry)
    grid = empty_grid(x.shape, plan, x.dtype)
    ranges = _sample_ranges(x.shape[0], math.prod(y_shape) * weights.shape[2])
    by_rows = _is_forward_by_rows(x.dtype, groups, weights.shape[2])
    if by_rows or _is_implicit(x.dtype, groups, weights.shape[2]):
        return conv_implicit.forward(x, weight, bias, grid, plan, ranges, by_rows), grid
    y = np.empty(y_shape, dtype=x.dtype)
    rows = weights.shape[0] * weights.shape[2]

    def forward_samples(start: int, stop: int) -> None:
        to_grid(x, grid, plan, start, stop)
        chunks = _chunks(start, stop, rows * plan.per_sample)
        for n0 in chunks:
            columns = min(chunks.step, stop - n0) * plan.per_sample
            cols = _scratch("cols", (rows, columns), x.dtype)
            grid_columns(grid, cols, n0, plan)
            product = _scratch("product", (groups, out_channels // groups, columns), x.dtype)
            np.matmul(weights, _grouped(cols, groups), out=product)
            outputs(product.reshape(out_channels, columns), y, bias, n0)

    blas_pool.run_split([functools.partial(forward_samples, *samples) for samples in ranges])
    return y, grid


def check_dy_fits(dy: Any, cols: Any, expected_shape: tuple[int, ...]) -> None:
    """The upstream gradient must have the convolution's output shape and the saved arrays' dtype."""
    if cols.dtype != dy.dtype:
        raise TypeError(f"cols dtype {cols.dtype} does not match the dy dtype {dy.dtype}")
    if tuple(dy.shape) != expected_shape:
        raise ValueError(f"dy must have shape {expected_shape}, got {tuple(dy.shape)}")


def conv2d_backward(
    dy: np.ndarray,
    saved: np.ndarray,
    x_shape: tuple[int, int, int, int],
    weight: np.ndarray,
    stride: IntPair = 1,
    padding: Padding = 0,
    dilation: IntPair = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    needs_input_grad: bool = True,
    needs_bias_grad: bool = True,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """Gradients of :func:`conv2d_forward` given the upstream gradient ``dy`` (N, O, OH, OW) and its ``saved``.

    Returns ``(dx, dweight, dbias)``; ``dx`` is None when ``needs_input_grad`` is False, ``dbias`` (the
    sum of ``dy`` over N, OH, OW) None when ``needs_bias_grad`` is False.
    """
    x_shape = _check_shape(tuple(x_shape), "x_shape")
    dy = check_nchw("dy", dy)
    weight = _check_weight(weight, x_shape[1], dy.dtype, groups)
    out_channels = weight.shape[0]
    prepared = _prepare(x_shape, weight.shape, stride, padding, dilation, groups, padding_mode)
    geometry = prepared.grid_geometry
    check_dy_fits(dy, saved, (x_shape[0], out_channels, *geometry.out_size))
    weights = _grouped(weight.reshape(out_channels, -1), groups)
    dbias = dy.sum(axis=(0, 2, 3)) if needs_bias_grad else None
    if _is_pointwise(geometry):
        dx, dweight = _pointwise_backward(dy, saved, prepared.input_shape, weights, needs_input_grad)
    else:
        dx, dweight = _grid_backward(dy, saved, prepared, weights, needs_input_grad)
    if dx is not None and prepared.input_shape != x_shape:
        dx = _unpad_with_mode(dx, x_shape, prepared.geometry.padding, padding_mode)
    return dx, dweight.reshape(weight.shape), dbias


def _check_saved(saved: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if not isinstance(saved, np.ndarray) or saved.shape != shape or saved.dtype != dtype:
        raise ValueError(f"saved must be what conv2d_forward returned: a {dtype} array of shape {shape}, "
                         f"got {getattr(saved, 'dtype', type(saved).__name__)} {getattr(saved, 'shape', '')}")
    return saved


def _pointwise_backward(dy: np.ndarray, x: Any, x_shape: tuple[int, ...], weights: np.ndarray,
                        needs_input_grad: bool) -> tuple[np.ndarray | None, np.ndarray]:
    n, c, h, w = x_shape
    groups = weights.shape[0]
    x = _check_saved(x, tuple(x_shape), dy.dtype).reshape(n, groups, c // groups, h * w)
    dy_groups = dy.reshape(n, groups, weights.shape[1], h * w)
    dweight = np.matmul(dy_groups, x.transpose(0, 1, 3, 2)).sum(axis=0)
    dx = np.matmul(weights.transpose(0, 2, 1), dy_groups).reshape(x_shape) if needs_input_grad else None
    return dx, dweight


def _grid_backward(dy: np.ndarray, grid: Any, prepared: _Prepared, weights: np.ndarray,
                   needs_input_grad: bool) -> tuple[np.ndarray | None, np.ndarray]:
    shape = prepared.input_shape
    plan = _grid_plan(shape[2], shape[3], prepared.grid_geometry)
    (sh, sw) = plan.stride
    grid = _check_saved(grid, (shape[0], shape[1], sh * sw, plan.plane_size), dy.dtype)
    groups, out_channels = weights.shape[0], weights.shape[0] * weights.shape[1]
    ranges = _sample_ranges(shape[0], dy.size * weights.shape[2])
    if _is_implicit(dy.dtype, groups, weights.shape[2]) and np.isfinite(weights).all():  # see conv_implicit.py
        weight = weights.reshape(out_channels, shape[1], *prepared.grid_geometry.kernel)
        return conv_implicit.backward(dy, grid, shape, weight, plan, ranges, needs_input_grad)
    rows = groups * weights.shape[2]
    dgrid = np.empty_like(grid) if needs_input_grad else None
    dx = np.empty(shape, dy.dtype) if needs_input_grad else None

    def backward_samples(start: int, stop: int) -> np.ndarray:
        """These samples' input gradient (into dx) and their part of dweight (returned)."""
        dweight = np.zeros_like(weights)
        if dgrid is not None:
            dgrid[start:stop] = 0
        chunks = _chunks(start, stop, rows * plan.per_sample)
        for n0 in chunks:
            columns = min(chunks.step, stop - n0) * plan.per_sample
            cols = _scratch("cols", (rows, columns), dy.dtype)
            grid_columns(grid, cols, n0, plan)
            grid_dy = _scratch("product", (out_channels, columns), dy.dtype)
            output_grads(dy, grid_dy, n0)
            grid_dy = _grouped(grid_dy, groups)
            dweight += np.matmul(_grouped(cols, groups), grid_dy.transpose(0, 2, 1)).transpose(0, 2, 1)
            if dgrid is not None:
                dcols = _scratch("cols", (groups, rows // groups, columns), dy.dtype)  # cols is no longer needed
                np.matmul(weights.transpose(0, 2, 1), grid_dy, out=dcols)
                add_grid_columns(dcols.reshape(rows, columns), dgrid, n0, plan)
        if dgrid is not None:
            from_grid(dgrid, dx, plan, start, stop)
        return dweight

    parts = blas_pool.run_split([functools.partial(backward_samples, *samples) for samples in ranges])
    dweight = np.zeros_like(weights) if not parts else parts[0]
    for part in parts[1:]:  # in a fixed order: the result depends on the thread count only
        dweight += part
    return dx, dweight


# ------------------------------------------------------------ the classic column layout
def _check_cols(
    cols: np.ndarray, input_shape: tuple[int, int, int, int], kernel: tuple[int, int], out_size: tuple[int, int]
) -> np.ndarray:
    """Check that ``cols`` is what :func:`im2col` returns for ``input_shape``; return it C-contiguous."""
    if not isinstance(cols, np.ndarray) or cols.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"cols must be a float32 or float64 numpy array, got {getattr(cols, 'dtype', type(cols))}")
    expected = (input_shape[0], input_shape[1] * kernel[0] * kernel[1], out_size[0] * out_size[1])
    if cols.shape != expected:
        raise ValueError(f"cols must have shape {expected} for input shape {tuple(input_shape)}, got {cols.shape}")
    return np.ascontiguousarray(cols)


def _window(input_shape: tuple[int, ...], kernel_size: IntPair, stride: IntPair, padding: Padding,
            dilation: IntPair) -> tuple[ConvGeometry, GridPlan]:
    kernel = _pair(kernel_size, "kernel_size", 1)
    geometry = conv2d_geometry(input_shape, (1, 1, *kernel), stride, padding, dilation)
    return geometry, _grid_plan(input_shape[2], input_shape[3], geometry)


def im2col(x: np.ndarray, kernel_size: IntPair, stride: IntPair = 1, padding: Padding = 0,
           dilation: IntPair = 1) -> np.ndarray:
    """Unroll every ``kh x kw`` receptive field of NCHW ``x`` (zero padded) into a column.

    Returns ``cols`` of shape ``(N, C*kh*kw, OH*OW)`` and x's dtype, row ``(c*kh + i)*kw + j``, column
    ``oh*OW + ow``, such that ``weight.reshape(O, C*kh*kw) @ cols[n]`` is the convolution of sample ``n``.
    """
    x = check_nchw("x", x)
    _, plan = _window(x.shape, kernel_size, stride, padding, dilation)
    n, rows = x.shape[0], x.shape[1] * plan.tap_phase.size
    cols = np.empty((rows, n * plan.per_sample), dtype=x.dtype)
    grid = empty_grid(x.shape, plan, x.dtype)
    to_grid(x, grid, plan, 0, n)
    grid_columns(grid, cols, 0, plan)
    return np.ascontiguousarray(cols.reshape(rows, n, plan.per_sample).transpose(1, 0, 2))


def col2im(
    cols: np.ndarray,
    input_shape: tuple[int, int, int, int],
    kernel_size: IntPair,
    stride: IntPair = 1,
    padding: Padding = 0,
    dilation: IntPair = 1,
) -> np.ndarray:
    """Adjoint of :func:`im2col`: scatter-add each column back to the input positions it was read from.

    ``cols`` has shape ``(N, C*kh*kw, OH*OW)``; returns ``dx`` of ``input_shape`` (N, C, H, W), where
    positions covered by several windows receive the sum of their contributions (the input gradient).
    """
    input_shape = _check_shape(tuple(input_shape), "input_shape")
    geometry, plan = _window(input_shape, kernel_size, stride, padding, dilation)
    cols = _check_cols(cols, input_shape, geometry.kernel, geometry.out_size)
    n, rows = input_shape[0], cols.shape[1]
    grid = empty_grid(input_shape, plan, cols.dtype)
    grid.fill(0)
    add_grid_columns(np.ascontiguousarray(cols.transpose(1, 0, 2)).reshape(rows, -1), grid, 0, plan)
    dx = np.empty(input_shape, dtype=cols.dtype)
    from_grid(grid, dx, plan, 0, n)
    return dx
