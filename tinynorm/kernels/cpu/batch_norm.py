"""BatchNorm on the CPU: each channel of ``x`` (N, C, S) is normalized over its N * S values.

A channel's values are not contiguous (N planes of S values, ``C * S`` apart), so the per-channel
reductions read ``x`` in place, split into fixed chunks of samples; each chunk leaves its partial
result in its own row of a buffer, and the rows are combined in a fixed order.

Two loop shapes, because a loop over a length-1 axis cannot be vectorized:
* ``S > 1``: one unit of work is (chunk of samples, channel) and walks contiguous planes ``x[n, c]``;
  small channel counts still give every thread work.
* ``S == 1`` (BatchNorm1d on ``(N, C)``): one unit is a chunk of rows, and the inner loops run along
  the contiguous channel axis.

``batch_norm_backward_reduce`` and ``batch_norm_backward_elemt`` are the two halves of the training
backward pass, separate so that a SyncBatchNorm can add the per-channel sums across processes in between.

Below the parallel threshold, ``batch_norm_training_forward`` (statistics, running update, rstd, output)
and ``batch_norm_backward`` (both halves) run as one compiled call each, on the same loops: for a small
layer the fixed costs of separate calls outweighed their work.

The same math in plain numpy, for reading: :mod:`tinynorm.kernels.reference` (``batch_norm_forward``,
``batch_norm_backward``, ``batch_norm_update_running``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..._checks import check_eps
from ..._checks import check_momentum
from ._config import JIT_OPTIONS, NUMPY_ROUNDING
from ._shared import (
    FLOAT_DTYPES,
    check_input,
    check_like,
    chunk_bounds,
    ieee_quietly,
    mean_var,
    num_chunks,
    out_of_range,
    output,
    param_or_fill,
    partials,
    use_parallel,
    variance_floor,
)

# Rows per tile in the S == 1 statistics: each tile's float32 sums are merged into the float64 totals.
TILE_ROWS = 64


# Merges always run in float64: over thousands of tiles float32 rounding would add up in the mean.
@njit("UniTuple(float64, 2)(float64, float64, float64, float64, float64, float64)", **JIT_OPTIONS)
def _merge(mean_a, m2_a, count_a, mean_b, m2_b, count_b):
    """Chan et al.: (mean, sum of squared deviations) of two sets from those of each set."""
    total = count_a + count_b
    delta = mean_b - mean_a
    return mean_a + delta * (count_b / total), m2_a + m2_b + delta * delta * (count_a * count_b / total)


@njit(**JIT_OPTIONS)
def _stats_planes(x, chunks, part_mean, part_m2, start, stop):
    """S > 1: unit (chunk, c) merges the statistics of planes ``x[n, c]``, n in the chunk's samples."""
    batch, channels, spatial = x.shape
    plane = float(spatial)
    for unit in range(start, stop):
        chunk, c = unit // channels, unit % channels
        first, last = chunk_bounds(chunk, chunks, batch)
        mean, m2, count = 0.0, 0.0, 0.0
        for n in range(first, last):
            plane_mean, plane_var = mean_var(x[n, c])
            mean, m2 = _merge(mean, m2, count, plane_mean, plane_var * plane, plane)
            count += plane
        part_mean[chunk, c] = mean
        part_m2[chunk, c] = m2


@njit(**JIT_OPTIONS)
def _stats_rows(x, chunks, part_mean, part_m2, start, stop):
    """S == 1 (``x`` is (N, C)): each chunk of rows merges, per channel, the statistics of its tiles.

    One pass per tile: sums of ``d = x - pivot`` and ``d²``, the pivot being the tile's first row.
    The pivot is one of the tile's own values, so ``sum(d²) - sum(d)²/n`` cancels little even when
    |mean| >> std (more accurate than a float32 two-pass mean there), and each value is read once
    instead of twice.
    """
    rows, channels = x.shape
    tile_sum = np.empty(channels, x.dtype)
    tile_sum_sq = np.empty(channels, x.dtype)
    for chunk in range(start, stop):
        mean, m2 = part_mean[chunk], part_m2[chunk]
        first, last = chunk_bounds(chunk, chunks, rows)
        for tile_start in range(first, last, TILE_ROWS):
            tile_stop = min(tile_start + TILE_ROWS, last)
            count = float(tile_start - first)
            tile_count = x.dtype.type(tile_stop - tile_start)
            pivot = x[tile_start]
            tile_sum[:] = 0
            tile_sum_sq[:] = 0
            for n in range(tile_start + 1, tile_stop):  # the pivot row itself adds d = 0
                row = x[n]
                for c in range(channels):
                    d = row[c] - pivot[c]
                    tile_sum[c] += d
                    tile_sum_sq[c] += d * d
            for c in range(channels):
                shift = tile_sum[c] / tile_count
                tile_m2 = max(tile_sum_sq[c] - shift * tile_sum[c], x.dtype.type(0))
                mean[c], m2[c] = _merge(mean[c], m2[c], count, float(pivot[c]) + shift, tile_m2, tile_count)


@njit(parallel=True, **JIT_OPTIONS)
def _stats_planes_parallel(x, chunks, part_mean, part_m2, parts):
    units = chunks * x.shape[1]
    for part in prange(parts):
        start, stop = chunk_bounds(part, parts, units)
        _stats_planes(x, chunks, part_mean, part_m2, start, stop)


@njit(parallel=True, **JIT_OPTIONS)
def _stats_rows_parallel(x, chunks, part_mean, part_m2, parts):
    for part in prange(parts):
        start, stop = chunk_bounds(part, parts, chunks)
        _stats_rows(x, chunks, part_mean, part_m2, start, stop)


@njit(**JIT_OPTIONS)
def _combine_chunks(part_mean, part_m2, batch, spatial, floor, mean, var):
    """Merge the chunks' partial statistics in chunk order into each channel's mean and variance.
    Returns how many channels have a non-finite mean or a variance out of range (below ``floor``,
    or inf or NaN from float32 squares that overflowed): :func:`_exact_channel_stats` redoes them."""
    out_of_range_channels = 0
    chunks = part_mean.shape[0]
    for c in range(mean.size):
        total_mean, total_m2, count = 0.0, 0.0, 0.0
        for chunk in range(chunks):
            first, last = chunk_bounds(chunk, chunks, batch)
            chunk_count = float((last - first) * spatial)
            total_mean, total_m2 = _merge(total_mean, total_m2, count, part_mean[chunk, c], part_m2[chunk, c],
                                          chunk_count)
            count += chunk_count
        mean[c] = total_mean
        var[c] = max(total_m2 / count, 0.0)
        out_of_range_channels += not np.isfinite(total_mean) or out_of_range(var[c], floor)
    return out_of_range_channels


def _check_x(x: object) -> np.ndarray:
    return check_input("x", x, 3, "(N, C, S)")


def batch_norm_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` (N, C, S) over its N * S values.

    Each chunk of samples gets its (mean, sum of squared deviations) from sums of deviations (from a
    mean or a pivot value, never from 0), merged with Chan's formula, so a large offset (|mean| >> std)
    loses no accuracy. Returns ``(mean, var)``, each ``(C,)``: ``mean`` in x's dtype, ``var`` in
    float64, the dtype of the merges, so that the variance of float32 data stays finite where it
    exceeds float32's range (std above ~1.8e19). Channels whose statistics left the dtype's range
    are computed again by :func:`_exact_channel_stats`.

    Reference: :func:`tinynorm.kernels.reference.batch_norm_stats`.
    """
    x = _check_x(x)
    batch, channels, spatial = x.shape
    if x.size == 0:
        return np.full(channels, np.nan, x.dtype), np.full(channels, np.nan)
    parallel = use_parallel(x.size)
    chunks = num_chunks(batch) if parallel else 1
    part_mean = partials(chunks, channels, np.dtype(np.float64))
    part_m2 = partials(chunks, channels, np.dtype(np.float64))
    if spatial == 1:
        rows = x.reshape(batch, channels)
        if parallel:
            _stats_rows_parallel(rows, chunks, part_mean, part_m2, chunks)
        else:
            _stats_rows(rows, chunks, part_mean, part_m2, 0, chunks)
    elif parallel:
        _stats_planes_parallel(x, chunks, part_mean, part_m2, num_chunks(chunks * channels))
    else:
        _stats_planes(x, chunks, part_mean, part_m2, 0, channels)
    mean, var = np.empty(channels, x.dtype), np.empty(channels)
    floor = variance_floor(x.dtype, 0.0)
    if _combine_chunks(part_mean, part_m2, batch, spatial, floor, mean, var):
        redo = ~((var >= floor) & (var < np.inf) & np.isfinite(mean))
        mean[redo], var[redo] = _exact_channel_stats(x[:, redo])
    return mean, var


def _exact_channel_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance (float64) of each channel of ``x`` (N, C, S), right for any finite data.

    Each channel is scaled by a power of two just above its largest magnitude, so that no square
    overflows or underflows (the scaling is exact). A channel holding inf or NaN gets its plain mean
    (±inf, or NaN for inf - inf) and a NaN variance, as in PyTorch, whose running_mean then becomes inf.
    """
    values = np.moveaxis(x, 1, 0).reshape(x.shape[1], -1).astype(np.float64)
    largest = np.abs(values).max(axis=1, initial=0.0)
    finite = np.isfinite(largest)
    exponent = np.where(finite & (largest > 0), np.frexp(largest)[1], 0)
    scaled = np.ldexp(values, -exponent[:, None])
    with ieee_quietly():
        mean = np.where(finite, np.ldexp(scaled.mean(axis=1), exponent), values.sum(axis=1) / values.shape[1])
        var = np.where(finite, np.ldexp(scaled.var(axis=1), 2 * exponent), np.nan)
    return mean, var


@njit(**JIT_OPTIONS)
def _scale_shift_rows(x, mean, scale, shift, y, start, stop):
    """``y[n, c, k] = (x[n, c, k] - mean[c]) * scale[c] + shift[c]`` for samples in [start, stop)."""
    channels, spatial = x.shape[1], x.shape[2]
    for n in range(start, stop):
        if spatial == 1:
            for c in range(channels):
                y[n, c, 0] = (x[n, c, 0] - mean[c]) * scale[c] + shift[c]
        else:
            for c in range(channels):
                m, a, b = mean[c], scale[c], shift[c]
                for k in range(spatial):
                    y[n, c, k] = (x[n, c, k] - m) * a + b


@njit(parallel=True, **JIT_OPTIONS)
def _scale_shift_parallel(x, mean, scale, shift, y, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _scale_shift_rows(x, mean, scale, shift, y, start, stop)


def batch_norm_forward(x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, weight: np.ndarray | None,
                       bias: np.ndarray | None, out: np.ndarray | None = None) -> np.ndarray:
    """Normalize each channel of ``x`` (N, C, S): ``y = (x - mean[c]) * rstd[c] * weight[c] + bias[c]``.

    Training passes the batch statistics (``rstd = 1 / sqrt(var + eps)``), evaluation the running
    ones. ``mean``, ``rstd``, ``weight``, ``bias`` are ``(C,)``; weight/bias may be None (1 and 0).
    Returns ``y``, written into ``out`` when given.

    Reference: :func:`tinynorm.kernels.reference.batch_norm_forward`.
    """
    x = _check_x(x)
    channels = x.shape[1]
    mean = check_like("mean", mean, (channels,), x.dtype)
    rstd = check_like("rstd", rstd, (channels,), x.dtype)
    scale = np.empty(channels, x.dtype)
    _affine_scale(rstd, param_or_fill("weight", weight, channels, x.dtype, 1.0), scale)
    shift = param_or_fill("bias", bias, channels, x.dtype, 0.0)
    y = output(out, x.shape, x.dtype)
    if use_parallel(x.size):
        _scale_shift_parallel(x, mean, scale, shift, y, num_chunks(x.shape[0]))
    elif x.size:
        _scale_shift_rows(x, mean, scale, shift, y, 0, x.shape[0])
    return y


@njit(**NUMPY_ROUNDING)
def _affine_scale(rstd, weight, scale):
    """``scale = rstd * weight``, each product rounded on its own (no ``fastmath``, which could fuse it
    into the normalization's multiply-add); an infinite rstd (eps = 0, a constant channel) times a zero
    weight gives NaN, as IEEE arithmetic."""
    for c in range(scale.size):
        scale[c] = rstd[c] * weight[c]


@njit(**JIT_OPTIONS)
def _training_forward_one_thread(x, weight, bias, eps, running_mean, running_var, unbias, keep, step, floor, mean,
                                 rstd, y):
    """:func:`batch_norm_stats`, :func:`batch_norm_update_running` (unless ``running_mean`` is empty),
    :func:`batch_norm_rstd` and :func:`batch_norm_forward` on one thread, in one call, with their
    values: the same compiled loops and per-channel helpers. Returns False, having written only
    ``mean``, where a channel's statistics are out of range (they are redone)."""
    batch, channels, spatial = x.shape
    one, zero = np.int64(1), np.int64(0)  # not literals, which would compile the loops again for their values
    part_mean, part_m2 = np.zeros((1, channels)), np.zeros((1, channels))
    if spatial == 1:
        _stats_rows(x.reshape(batch, channels), one, part_mean, part_m2, zero, one)
    else:
        _stats_planes(x, one, part_mean, part_m2, zero, channels)
    var = np.empty(channels)
    if _combine_chunks(part_mean, part_m2, batch, spatial, floor, mean, var):
        return False
    if running_mean.size:
        _update_running(running_mean, running_var, mean, var, unbias, keep, step)
    rstd_float64 = np.empty(channels)
    _rstd(var, eps, 1.0, rstd_float64)
    for c in range(channels):
        rstd[c] = rstd_float64[c]  # rounded to x's dtype, as batch_norm_rstd(...).astype(x.dtype)
    scale = np.empty_like(rstd)
    _affine_scale(rstd, weight, scale)
    _scale_shift_rows(x, mean, scale, bias, y, zero, batch)
    return True


def batch_norm_training_forward(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                                running_mean: np.ndarray | None = None, running_var: np.ndarray | None = None,
                                momentum: float = 0.1, out: np.ndarray | None = None
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BatchNorm's training forward of ``x`` (N, C, S): its batch statistics, ``y`` normalized with them,
    and the running statistics moved toward them when given (an empty batch leaves them as they are).

    Returns ``(y, mean, rstd)``, ``rstd = 1 / sqrt(var + eps)`` in x's dtype, ``y`` written into ``out``
    when given: the values of :func:`batch_norm_stats`, :func:`batch_norm_rstd`,
    :func:`batch_norm_forward` and :func:`batch_norm_update_running` called in turn, which is what runs
    above the parallel threshold or for buffers of another dtype. Below it the four are one compiled
    call: the fixed costs of four calls were most of a small layer's time (docs/benchmarks.md). Every
    argument is checked before anything is written.
    """
    x = _check_x(x)
    batch, channels, spatial = x.shape
    weight = param_or_fill("weight", weight, channels, x.dtype, 1.0)
    bias = param_or_fill("bias", bias, channels, x.dtype, 0.0)
    eps = check_eps(eps, np.dtype(np.float64))
    count = batch * spatial
    tracked = _check_running_buffers(running_mean, running_var, channels)
    if tracked:
        momentum = check_momentum(momentum, op="batch_norm_training_forward")
    updates = tracked and x.size > 0
    if updates and count < 2:
        raise ValueError(f"x of shape {x.shape} has one value per channel: the running variance needs more")
    y = output(out, x.shape, x.dtype)
    if x.size and not use_parallel(x.size) and (not updates or running_mean.dtype == running_var.dtype == x.dtype):
        mean, rstd = np.empty(channels, x.dtype), np.empty(channels, x.dtype)
        if updates:
            running = (running_mean, running_var, count / (count - 1), x.dtype.type(1 - momentum),
                       x.dtype.type(momentum))
        else:  # empty buffers: no update
            running = (np.empty(0, x.dtype), np.empty(0, x.dtype), 1.0, x.dtype.type(1), x.dtype.type(0))
        if _training_forward_one_thread(x, weight, bias, eps, *running, variance_floor(x.dtype, 0.0), mean, rstd, y):
            return y, mean, rstd
    mean, var = batch_norm_stats(x)
    rstd = batch_norm_rstd(var, eps).astype(x.dtype)
    batch_norm_forward(x, mean, rstd, weight, bias, out=y)
    if updates:
        batch_norm_update_running(running_mean, running_var, mean, var, count, momentum)
    return y, mean, rstd


def _check_running_buffers(running_mean: object, running_var: object, channels: int) -> bool:
    """Whether running buffers are given, after checking them: both or neither, each a writeable
    floating-point numpy array of one value per channel."""
    if running_mean is None and running_var is None:
        return False
    for name, buffer in (("running_mean", running_mean), ("running_var", running_var)):
        if not isinstance(buffer, np.ndarray):
            raise TypeError(f"{name} must be a numpy.ndarray (the buffers both given or both None), got "
                            f"{type(buffer).__name__}")
        if buffer.dtype.kind != "f":
            raise TypeError(f"{name} must be a floating-point array, got dtype {buffer.dtype}")
        if buffer.shape != (channels,):
            raise ValueError(f"{name} must have shape ({channels},), one value per channel of x, got {buffer.shape}")
        if not buffer.flags.writeable:
            raise ValueError(f"{name} is read-only: the running statistics are updated in place")
    return True


@njit(**JIT_OPTIONS)
def _reduce_planes(dy, x, mean, chunks, part_dy, part_dy_xmu, start, stop):
    """S > 1: unit (chunk, c) sums ``dy`` and ``dy * (x - mean)`` over the chunk's planes ``[n, c]``."""
    batch, channels, spatial = x.shape
    for unit in range(start, stop):
        chunk, c = unit // channels, unit % channels
        first, last = chunk_bounds(chunk, chunks, batch)
        m = mean[c]
        sum_dy = x.dtype.type(0)
        sum_dy_xmu = x.dtype.type(0)
        for n in range(first, last):
            for k in range(spatial):
                sum_dy += dy[n, c, k]
                sum_dy_xmu += dy[n, c, k] * (x[n, c, k] - m)
        part_dy[chunk, c] = sum_dy
        part_dy_xmu[chunk, c] = sum_dy_xmu


@njit(**JIT_OPTIONS)
def _reduce_rows(dy, x, mean, chunks, part_dy, part_dy_xmu, start, stop):
    """S == 1 (``x`` is (N, C)): each chunk of rows sums ``dy`` and ``dy * (x - mean)`` per channel."""
    rows, channels = x.shape
    for chunk in range(start, stop):
        sum_dy, sum_dy_xmu = part_dy[chunk], part_dy_xmu[chunk]
        first, last = chunk_bounds(chunk, chunks, rows)
        for n in range(first, last):
            for c in range(channels):
                sum_dy[c] += dy[n, c]
                sum_dy_xmu[c] += dy[n, c] * (x[n, c] - mean[c])


@njit(parallel=True, **JIT_OPTIONS)
def _reduce_planes_parallel(dy, x, mean, chunks, part_dy, part_dy_xmu, parts):
    units = chunks * x.shape[1]
    for part in prange(parts):
        start, stop = chunk_bounds(part, parts, units)
        _reduce_planes(dy, x, mean, chunks, part_dy, part_dy_xmu, start, stop)


@njit(parallel=True, **JIT_OPTIONS)
def _reduce_rows_parallel(dy, x, mean, chunks, part_dy, part_dy_xmu, parts):
    for part in prange(parts):
        start, stop = chunk_bounds(part, parts, chunks)
        _reduce_rows(dy, x, mean, chunks, part_dy, part_dy_xmu, start, stop)


def _check_grad_inputs(dy: object, x: object, mean: object, rstd: object) -> tuple[np.ndarray, ...]:
    x = _check_x(x)
    channels = x.shape[1]
    return (check_like("dy", dy, x.shape, x.dtype), x, check_like("mean", mean, (channels,), x.dtype),
            check_like("rstd", rstd, (channels,), x.dtype))


def batch_norm_backward_reduce(dy: np.ndarray, x: np.ndarray, mean: np.ndarray,
                               rstd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel sums over (N, S): ``sum_dy = sum(dy)`` and ``sum_dy_xhat = sum(dy * xhat)``.

    ``xhat = (x - mean[c]) * rstd[c]``. These are ``dbias`` and ``dweight``, and (divided by N * S)
    the two means the input gradient needs. Returns ``(sum_dy, sum_dy_xhat)``, each ``(C,)``.
    """
    dy, x, mean, rstd = _check_grad_inputs(dy, x, mean, rstd)
    batch, channels, spatial = x.shape
    parallel = use_parallel(x.size)
    chunks = num_chunks(batch) if parallel else 1
    part_dy = partials(chunks, channels, x.dtype)
    part_dy_xmu = partials(chunks, channels, x.dtype)
    if x.size == 0:
        return np.zeros(channels, x.dtype), np.zeros(channels, x.dtype)
    if spatial == 1:
        dy_rows, x_rows = dy.reshape(batch, channels), x.reshape(batch, channels)
        if parallel:
            _reduce_rows_parallel(dy_rows, x_rows, mean, chunks, part_dy, part_dy_xmu, chunks)
        else:
            _reduce_rows(dy_rows, x_rows, mean, chunks, part_dy, part_dy_xmu, 0, chunks)
    elif parallel:
        _reduce_planes_parallel(dy, x, mean, chunks, part_dy, part_dy_xmu, num_chunks(chunks * channels))
    else:
        _reduce_planes(dy, x, mean, chunks, part_dy, part_dy_xmu, 0, channels)
    with ieee_quietly():
        return part_dy[:, :channels].sum(axis=0), part_dy_xmu[:, :channels].sum(axis=0) * rstd


@njit(**JIT_OPTIONS)
def _elemt_rows(dy, x, mean, dy_scale, x_scale, shift, dx, start, stop):
    """``dx = dy * dy_scale[c] + (x - mean[c]) * x_scale[c] + shift[c]`` for samples in [start, stop)."""
    channels, spatial = x.shape[1], x.shape[2]
    for n in range(start, stop):
        if spatial == 1:
            for c in range(channels):
                dx[n, c, 0] = dy[n, c, 0] * dy_scale[c] + (x[n, c, 0] - mean[c]) * x_scale[c] + shift[c]
        else:
            for c in range(channels):
                m, a, b, d = mean[c], dy_scale[c], x_scale[c], shift[c]
                for k in range(spatial):
                    dx[n, c, k] = dy[n, c, k] * a + (x[n, c, k] - m) * b + d


@njit(parallel=True, **JIT_OPTIONS)
def _elemt_parallel(dy, x, mean, dy_scale, x_scale, shift, dx, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _elemt_rows(dy, x, mean, dy_scale, x_scale, shift, dx, start, stop)


def batch_norm_backward_elemt(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                              weight: np.ndarray | None, mean_dy: np.ndarray,
                              mean_dy_xhat: np.ndarray) -> np.ndarray:
    """Input gradient from the per-channel means of :func:`batch_norm_backward_reduce`:

    ``dx = rstd[c] * weight[c] * (dy - mean_dy[c] - xhat * mean_dy_xhat[c])``, ``xhat = (x - mean) * rstd``.
    Zero means give the evaluation gradient ``dy * weight * rstd``.
    """
    dy, x, mean, rstd = _check_grad_inputs(dy, x, mean, rstd)
    channels = x.shape[1]
    mean_dy = check_like("mean_dy", mean_dy, (channels,), x.dtype)
    mean_dy_xhat = check_like("mean_dy_xhat", mean_dy_xhat, (channels,), x.dtype)
    dy_scale, x_scale, shift = np.empty((3, channels), x.dtype)
    _elemt_scales(rstd, param_or_fill("weight", weight, channels, x.dtype, 1.0), mean_dy, mean_dy_xhat, dy_scale,
                  x_scale, shift)
    dx = np.empty_like(x)
    if use_parallel(x.size):
        _elemt_parallel(dy, x, mean, dy_scale, x_scale, shift, dx, num_chunks(x.shape[0]))
    elif x.size:
        _elemt_rows(dy, x, mean, dy_scale, x_scale, shift, dx, 0, x.shape[0])
    return dx


@njit(**NUMPY_ROUNDING)
def _elemt_scales(rstd, weight, mean_dy, mean_dy_xhat, dy_scale, x_scale, shift):
    """The factors of ``dx = dy * dy_scale + (x - mean) * x_scale + shift`` per channel, the expansion of
    ``dy_scale * (dy - mean_dy - xhat * mean_dy_xhat)`` with ``dy_scale = rstd * weight``: each operation
    rounded on its own (no ``fastmath``), inf and NaN as IEEE arithmetic gives them."""
    for c in range(rstd.size):
        dy_scale[c] = rstd[c] * weight[c]
        x_scale[c] = -rstd[c] * mean_dy_xhat[c] * dy_scale[c]
        shift[c] = -mean_dy[c] * dy_scale[c]


@njit(**NUMPY_ROUNDING)
def _reduced_means(part_dy, part_dy_xmu, rstd, count, sum_dy, sum_dy_xhat, mean_dy, mean_dy_xhat):
    """One chunk's sums as :func:`batch_norm_backward_reduce` returns them (``sum_dy_xhat = sum(dy * (x -
    mean)) * rstd``) and, for a ``count`` above 0 (training), their means as :func:`batch_norm_backward`
    takes them; each operation rounded on its own."""
    for c in range(rstd.size):
        sum_dy[c] = 0.0 + part_dy[c]  # numpy's sum of one row starts from +0.0: -0.0 comes out as 0.0
        sum_dy_xhat[c] = (0.0 + part_dy_xmu[c]) * rstd[c]
        if count > 0:
            mean_dy[c] = sum_dy[c] / count
            mean_dy_xhat[c] = sum_dy_xhat[c] / count


@njit(**JIT_OPTIONS)
def _backward_one_thread(dy, x, mean, rstd, weight, count, dx, sum_dy, sum_dy_xhat):
    """:func:`batch_norm_backward_reduce` and :func:`batch_norm_backward_elemt` on one thread, in one call,
    with their values; ``count`` is the number of values per channel in training, 0 for the evaluation
    gradient (zero means)."""
    batch, channels, spatial = x.shape
    one, zero = np.int64(1), np.int64(0)  # not literals, which would compile the loops again for their values
    part_dy, part_dy_xmu = np.zeros((1, channels), x.dtype), np.zeros((1, channels), x.dtype)
    if spatial == 1:
        _reduce_rows(dy.reshape(batch, channels), x.reshape(batch, channels), mean, one, part_dy, part_dy_xmu, zero,
                     one)
    else:
        _reduce_planes(dy, x, mean, one, part_dy, part_dy_xmu, zero, channels)
    means = np.zeros((2, channels), x.dtype)
    _reduced_means(part_dy[0], part_dy_xmu[0], rstd, count, sum_dy, sum_dy_xhat, means[0], means[1])
    scales = np.empty((3, channels), x.dtype)
    _elemt_scales(rstd, weight, means[0], means[1], scales[0], scales[1], scales[2])
    _elemt_rows(dy, x, mean, scales[0], scales[1], scales[2], dx, zero, batch)


def batch_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        weight: np.ndarray | None, training: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`batch_norm_forward` given the upstream gradient ``dy``.

    ``training=True`` (``mean``/``rstd`` are the batch's own statistics):
    ``dx = rstd * weight * (dy - mean(dy) - xhat * mean(dy * xhat))``, means per channel over (N, S).
    ``training=False`` (running statistics, constants): ``dx = dy * weight * rstd``.
    Both: ``dweight = sum(dy * xhat)``, ``dbias = sum(dy)``. Returns ``(dx, dweight, dbias)``.

    Below the parallel threshold the two halves run as one compiled call, with the same values.

    Reference: :func:`tinynorm.kernels.reference.batch_norm_backward`.
    """
    dy, x, mean, rstd = _check_grad_inputs(dy, x, mean, rstd)
    if x.size and not use_parallel(x.size):
        channels = x.shape[1]
        dx, sum_dy, sum_dy_xhat = np.empty_like(x), np.empty(channels, x.dtype), np.empty(channels, x.dtype)
        count = x.dtype.type(x.shape[0] * x.shape[2] if training else 0)
        _backward_one_thread(dy, x, mean, rstd, param_or_fill("weight", weight, channels, x.dtype, 1.0), count, dx,
                             sum_dy, sum_dy_xhat)
        return dx, sum_dy_xhat, sum_dy
    sum_dy, sum_dy_xhat = batch_norm_backward_reduce(dy, x, mean, rstd)
    if training:
        count = max(x.shape[0] * x.shape[2], 1)
        mean_dy, mean_dy_xhat = sum_dy / count, sum_dy_xhat / count
    else:
        mean_dy = mean_dy_xhat = np.zeros_like(sum_dy)
    dx = batch_norm_backward_elemt(dy, x, mean, rstd, weight, mean_dy, mean_dy_xhat)
    return dx, sum_dy_xhat, sum_dy


def batch_norm_rstd(var: np.ndarray, eps: float) -> np.ndarray:
    """``rstd = 1 / sqrt(var + eps)`` per channel, in ``var``'s dtype: the scale :func:`batch_norm_forward`
    takes (in x's dtype). ``var = eps = 0`` gives inf, as IEEE arithmetic, without a warning."""
    if not isinstance(var, np.ndarray) or var.dtype.kind != "f":
        raise TypeError(f"var must be a float numpy.ndarray, got {getattr(var, 'dtype', type(var).__name__)}")
    with ieee_quietly():  # also for an eps beyond the dtype's range, which becomes inf
        eps = check_eps(eps, var.dtype)
        if var.ndim == 1 and var.dtype in FLOAT_DTYPES:  # a compiled loop: no temporaries
            rstd = np.empty_like(var)
            _rstd(var, eps, var.dtype.type(1), rstd)
            return rstd
        return 1 / np.sqrt(var + eps)


@njit(**NUMPY_ROUNDING)
def _rstd(var, eps, one, rstd):
    """``rstd = one / sqrt(var + eps)`` in var's dtype (``one`` is 1 in it): numpy's operations, so its
    values; a zero gives inf and a negative NaN, as IEEE arithmetic, without ``fastmath``'s reciprocal."""
    for c in range(var.size):
        rstd[c] = one / np.sqrt(var[c] + eps)


def batch_norm_update_running(running_mean: np.ndarray, running_var: np.ndarray, mean: np.ndarray,
                              var: np.ndarray, count: int, momentum: float) -> None:
    """Update the running statistics in place, as PyTorch does:
    ``running = (1 - momentum) * running + momentum * batch``, in the buffers' dtype.

    ``mean`` and ``var`` are a batch's statistics over ``count`` values per channel (the biased
    variance, :func:`batch_norm_stats`); the running variance tracks the unbiased one,
    ``var * count / (count - 1)``.

    Reference: :func:`tinynorm.kernels.reference.batch_norm_update_running`.
    """
    _check_running_shapes(running_mean, running_var, mean, var)
    check_count(count)
    momentum = check_momentum(momentum, op="batch_norm_update_running")
    dtype, unbias = running_mean.dtype, count / (count - 1)
    # One compiled loop for the eight array operations, for the statistics batch_norm_stats gives (the
    # mean in the buffers' dtype, the variance in float64): one signature per dtype.
    if (dtype == running_var.dtype == mean.dtype and dtype in FLOAT_DTYPES and var.dtype == np.float64
            and running_mean.flags.writeable and running_var.flags.writeable):  # else numpy's error
        _update_running(running_mean, running_var, mean, var, unbias, dtype.type(1 - momentum), dtype.type(momentum))
        return
    unbiased_var = var * unbias
    with ieee_quietly():  # a float64 variance beyond float32's range becomes inf, as in PyTorch
        for running, batch in ((running_mean, mean), (running_var, unbiased_var)):
            running[...] = (1 - momentum) * running + momentum * batch.astype(running.dtype)


@njit(**NUMPY_ROUNDING)
def _update_running(running_mean, running_var, mean, var, unbias, keep, weight):
    """``running = keep * running + weight * batch``, the variance unbiased in float64 and then rounded to
    the buffers' dtype: the operations and roundings of the numpy form above, so the same values (NaN
    where it gives NaN, its sign aside), without ``fastmath`` (which would fuse them). A variance beyond
    float32's range becomes inf in the rounding, as in PyTorch."""
    for c in range(running_mean.size):
        running_mean[c] = keep * running_mean[c] + weight * mean[c]
        previous = running_var[c]
        running_var[c] = var[c] * unbias  # stored first: the rounding to the buffer's dtype
        running_var[c] = keep * previous + weight * running_var[c]


def _check_running_shapes(running_mean: object, running_var: object, mean: object, var: object) -> None:
    """The arrays :func:`batch_norm_update_running` needs: all ``(C,)``, the running ones floating-point
    (an integer buffer would silently truncate the update)."""
    for name, array in (("running_mean", running_mean), ("running_var", running_var), ("mean", mean), ("var", var)):
        if not hasattr(array, "shape"):
            raise TypeError(f"{name} must be an array, got {type(array).__name__}")
    for name, array in (("running_mean", running_mean), ("running_var", running_var)):
        if np.dtype(array.dtype).kind != "f":
            raise TypeError(f"{name} must be a floating-point array, got dtype {array.dtype}")
    channels = tuple(running_mean.shape)
    if len(channels) != 1:
        raise ValueError(f"running_mean must be 1-D (C,), got shape {channels}")
    for name, array in (("running_var", running_var), ("mean", mean), ("var", var)):
        if tuple(array.shape) != channels:
            raise ValueError(f"{name} must have running_mean's shape {channels}, got {tuple(array.shape)}")


def check_count(count: object) -> None:
    """A number of values per channel that has a variance (> 1); shared with the CUDA kernel."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count <= 1:
        raise ValueError(f"count must be an integer > 1 (values per channel; one value has no variance), got {count!r}")
