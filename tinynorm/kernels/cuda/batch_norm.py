"""BatchNorm on the GPU, with the signatures of :mod:`tinynorm.kernels.cpu.batch_norm`.

Each channel of ``x`` (N, C, S) is normalized over its N * S values. One block per channel would
leave most SMs idle when C is small, so every per-channel reduction is split over a 2-D grid
``(chunks, C)``: block ``(k, c)`` reduces the k-th contiguous range of channel c's N * S values (in
``n * S + s`` order) to one partial, and a one-thread-per-channel kernel combines the partials in a
fixed order. The forward and input-gradient passes are elementwise kernels over the flat array.

Statistics are accurate when |mean| >> std: a block sums ``d = x - pivot`` and ``d²`` with the first
value of its range as the pivot, turns them into (count, mean, M2), and the partials are merged with
Chan's formula. All arithmetic is float32; ``x``/``dy``/``y``/``dx`` are float16 or float32.
"""
from __future__ import annotations

import math

import numpy as np
from ..._checks import check_eps
from ...backends.cuda.runtime.compiler import cuda, float32

from ..cpu.batch_norm import check_count
from ._reduce import WARP_SIZE, block_sum
from ._shared import (
    PARAM_DTYPE,
    check_array,
    check_contiguous,
    check_input,
    check_like,
    check_param,
    check_stat,
    empty,
    grid_size,
    output,
    sm_count,
)
from ...backends.cuda.runtime.launch import jit, launch
from ...backends.cuda.array import CudaArray

THREADS = 256
# A reduction block handles at least this many values of its channel (fewer, larger partials);
# the grid aims for a few blocks per SM in all.
MIN_VALUES_PER_BLOCK = 4 * THREADS
BLOCKS_PER_SM = 4


@cuda.jit(device=True)
def _chunk_range(values):
    """``[start, stop)`` of the channel's ``values`` that block ``blockIdx.x`` of ``gridDim.x`` reduces."""
    chunk, chunks = cuda.blockIdx.x, cuda.gridDim.x
    return chunk * values // chunks, (chunk + 1) * values // chunks


@jit
def _stats_kernel(x, part):
    """Block (k, c): ``part[:, k, c] = (count, mean, M2)`` of its range of channel c (shifted sums)."""
    batch, _, spatial = x.shape
    c = cuda.blockIdx.y
    start, stop = _chunk_range(batch * spatial)
    pivot = float32(x[start // spatial, c, start % spatial])
    sum_d = float32(0)
    sum_d2 = float32(0)
    for t in range(start + cuda.threadIdx.x, stop, cuda.blockDim.x):
        n = t // spatial
        d = float32(x[n, c, t - n * spatial]) - pivot
        sum_d += d
        sum_d2 += d * d
    sum_d = block_sum(sum_d)
    sum_d2 = block_sum(sum_d2)
    if cuda.threadIdx.x == 0:
        count = float32(stop - start)
        mean_d = sum_d / count
        part[0, cuda.blockIdx.x, c] = count
        part[1, cuda.blockIdx.x, c] = pivot + mean_d
        part[2, cuda.blockIdx.x, c] = max(sum_d2 - sum_d * mean_d, float32(0))


@jit
def _merge_stats_kernel(part, mean, var):
    """Thread c merges channel c's partials in chunk order (Chan et al.) into its mean and variance."""
    c = cuda.grid(1)
    if c < part.shape[2]:
        count, m, m2 = part[0, 0, c], part[1, 0, c], part[2, 0, c]
        for k in range(1, part.shape[1]):
            count_k = part[0, k, c]
            total = count + count_k
            delta = part[1, k, c] - m
            m += delta * (count_k / total)
            m2 += part[2, k, c] + delta * delta * (count / total * count_k)
            count = total
        mean[c] = m
        var[c] = max(m2 / count, float32(0))


@jit
def _rstd_kernel(var, eps, rstd):
    """Thread c: ``rstd[c] = 1 / sqrt(var[c] + eps)``."""
    c = cuda.grid(1)
    if c < var.size:
        rstd[c] = float32(1) / math.sqrt(var[c] + eps)


@jit
def _update_running_kernel(running_mean, running_var, mean, var, keep, momentum, correction):
    """Thread c: ``running = keep * running + momentum * batch`` for the mean and the variance, the
    batch variance made unbiased (times ``correction``); float32 arithmetic, stored in the buffers' dtype."""
    c = cuda.grid(1)
    if c < mean.size:
        running_mean[c] = keep * float32(running_mean[c]) + momentum * mean[c]
        running_var[c] = keep * float32(running_var[c]) + momentum * (var[c] * correction)


@jit
def _reduce_kernel(dy, x, mean, part):
    """Block (k, c): ``part[:, k, c] = (sum dy, sum dy * (x - mean[c]))`` over its range of channel c."""
    batch, _, spatial = x.shape
    c = cuda.blockIdx.y
    start, stop = _chunk_range(batch * spatial)
    m = mean[c]
    sum_dy = float32(0)
    sum_dy_xmu = float32(0)
    for t in range(start + cuda.threadIdx.x, stop, cuda.blockDim.x):
        n = t // spatial
        k = t - n * spatial
        d = float32(dy[n, c, k])
        sum_dy += d
        sum_dy_xmu += d * (float32(x[n, c, k]) - m)
    sum_dy = block_sum(sum_dy)
    sum_dy_xmu = block_sum(sum_dy_xmu)
    if cuda.threadIdx.x == 0:
        part[0, cuda.blockIdx.x, c] = sum_dy
        part[1, cuda.blockIdx.x, c] = sum_dy_xmu


@jit
def _merge_reduce_kernel(part, rstd, sum_dy, sum_dy_xhat):
    """Thread c adds channel c's partials in chunk order; ``sum(dy * xhat) = rstd * sum(dy * (x - mean))``."""
    c = cuda.grid(1)
    if c < part.shape[2]:
        total_dy = float32(0)
        total_dy_xmu = float32(0)
        for k in range(part.shape[1]):
            total_dy += part[0, k, c]
            total_dy_xmu += part[1, k, c]
        sum_dy[c] = total_dy
        sum_dy_xhat[c] = total_dy_xmu * rstd[c]


@jit
def _forward_kernel(x, mean, rstd, weight, bias, y, channels, spatial):
    """Flat ``x``/``y``: ``y = (x - mean[c]) * rstd[c] * weight[c] + bias[c]``, ``c = i // S % C``."""
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        c = i // spatial % channels
        value = (float32(x[i]) - mean[c]) * rstd[c]
        if weight is not None:
            value *= weight[c]
        if bias is not None:
            value += bias[c]
        y[i] = value


@jit
def _elemt_kernel(dy, x, mean, rstd, weight, sum_dy, sum_dy_xhat, factor, dx, channels, spatial):
    """Flat arrays: ``dx = rstd * weight * (dy - factor * sum_dy - xhat * factor * sum_dy_xhat)``.

    ``factor`` turns the sums into means: 1 when they already are means, ``1 / (N * S)`` for sums,
    0 for the evaluation gradient ``dy * weight * rstd``.
    """
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        c = i // spatial % channels
        s = rstd[c]
        scale = s * weight[c] if weight is not None else s
        xhat = (float32(x[i]) - mean[c]) * s
        dx[i] = scale * (float32(dy[i]) - factor * sum_dy[c] - xhat * (factor * sum_dy_xhat[c]))


def _check_x(x):
    return check_input("x", x, 3, "(N, C, S)")


def _reduction_launch(x) -> tuple[tuple[int, int], int]:
    """Grid ``(chunks, C)`` and block size for the per-channel reductions: enough blocks per channel
    to fill the GPU, each with a sizeable range, and no more threads than a range has values."""
    batch, channels, spatial = x.shape
    values = batch * spatial
    chunks = max(1, min(-(-values // MIN_VALUES_PER_BLOCK), BLOCKS_PER_SM * sm_count() // channels))
    per_chunk = -(-values // chunks)
    return (chunks, channels), min(THREADS, -(-per_chunk // WARP_SIZE) * WARP_SIZE)


def _flat(array):
    return array.subarray(0, array.size)


def batch_norm_stats(x) -> tuple:
    """Per-channel mean and biased variance of ``x`` (N, C, S) over its N * S values.

    Returns float32 ``(mean, var)``, each ``(C,)`` (NaN when ``x`` has no values, like the CPU kernel).
    """
    x = _check_x(x)
    channels = x.shape[1]
    if x.size == 0:
        nan = np.full(channels, np.nan, PARAM_DTYPE)
        return CudaArray.from_host(nan), CudaArray.from_host(nan)
    grid, threads = _reduction_launch(x)
    part = empty((3,) + grid, PARAM_DTYPE)
    launch(_stats_kernel, grid, threads, (x, part))
    mean, var = empty(channels, PARAM_DTYPE), empty(channels, PARAM_DTYPE)
    launch(_merge_stats_kernel, grid_size(channels, THREADS), THREADS, (part, mean, var))
    return mean, var


def batch_norm_forward(x, mean, rstd, weight, bias, out=None):
    """Normalize each channel of ``x`` (N, C, S): ``y = (x - mean[c]) * rstd[c] * weight[c] + bias[c]``.

    Training passes the batch statistics (``rstd = 1 / sqrt(var + eps)``), evaluation the running
    ones. ``mean``, ``rstd``, ``weight``, ``bias`` are float32 ``(C,)``; weight/bias may be None.
    Returns ``y`` (``x``'s dtype), written into ``out`` when given.
    """
    x = _check_x(x)
    channels, spatial = x.shape[1], x.shape[2]
    mean = check_stat("mean", mean, (channels,))
    rstd = check_stat("rstd", rstd, (channels,))
    weight = check_param("weight", weight, (channels,))
    bias = check_param("bias", bias, (channels,))
    y = output(out, x.shape, x.dtype)
    if x.size:
        launch(_forward_kernel, grid_size(x.size, THREADS), THREADS,
               (_flat(x), mean, rstd, weight, bias, _flat(y), channels, spatial))
    return y


def _check_grad_inputs(dy, x, mean, rstd) -> tuple:
    x = _check_x(x)
    channels = x.shape[1]
    return (check_like("dy", dy, x.shape, x.dtype), x, check_stat("mean", mean, (channels,)),
            check_stat("rstd", rstd, (channels,)))


def batch_norm_backward_reduce(dy, x, mean, rstd) -> tuple:
    """Per-channel sums over (N, S): ``sum_dy = sum(dy)`` and ``sum_dy_xhat = sum(dy * xhat)``.

    ``xhat = (x - mean[c]) * rstd[c]``. These are ``dbias`` and ``dweight``, and (divided by N * S)
    the two means the input gradient needs. Returns float32 ``(sum_dy, sum_dy_xhat)``, each ``(C,)``.
    """
    return _reduce(*_check_grad_inputs(dy, x, mean, rstd))


def _reduce(dy, x, mean, rstd) -> tuple:
    channels = x.shape[1]
    if x.size:
        grid, threads = _reduction_launch(x)
        part = empty((2,) + grid, PARAM_DTYPE)
        launch(_reduce_kernel, grid, threads, (dy, x, mean, part))
    else:
        part = empty((2, 0, channels), PARAM_DTYPE)
    sum_dy, sum_dy_xhat = empty(channels, PARAM_DTYPE), empty(channels, PARAM_DTYPE)
    if channels:
        launch(_merge_reduce_kernel, grid_size(channels, THREADS), THREADS, (part, rstd, sum_dy, sum_dy_xhat))
    return sum_dy, sum_dy_xhat


def _elemt(dy, x, mean, rstd, weight, sum_dy, sum_dy_xhat, factor: float):
    dx = empty(x.shape, x.dtype)
    if x.size:
        launch(_elemt_kernel, grid_size(x.size, THREADS), THREADS,
               (_flat(dy), _flat(x), mean, rstd, weight, sum_dy, sum_dy_xhat, np.float32(factor), _flat(dx),
                x.shape[1], x.shape[2]))
    return dx


def batch_norm_backward_elemt(dy, x, mean, rstd, weight, mean_dy, mean_dy_xhat):
    """Input gradient from the per-channel means of :func:`batch_norm_backward_reduce`:

    ``dx = rstd[c] * weight[c] * (dy - mean_dy[c] - xhat * mean_dy_xhat[c])``, ``xhat = (x - mean) * rstd``.
    Zero means give the evaluation gradient ``dy * weight * rstd``.
    """
    dy, x, mean, rstd = _check_grad_inputs(dy, x, mean, rstd)
    channels = x.shape[1]
    weight = check_param("weight", weight, (channels,))
    mean_dy = check_stat("mean_dy", mean_dy, (channels,))
    mean_dy_xhat = check_stat("mean_dy_xhat", mean_dy_xhat, (channels,))
    return _elemt(dy, x, mean, rstd, weight, mean_dy, mean_dy_xhat, 1.0)


def batch_norm_backward(dy, x, mean, rstd, weight, training: bool) -> tuple:
    """Gradients of :func:`batch_norm_forward` given the upstream gradient ``dy``.

    ``training=True`` (``mean``/``rstd`` are the batch's own statistics):
    ``dx = rstd * weight * (dy - mean(dy) - xhat * mean(dy * xhat))``, means per channel over (N, S).
    ``training=False`` (running statistics, constants): ``dx = dy * weight * rstd``.
    Both: ``dweight = sum(dy * xhat)``, ``dbias = sum(dy)``. Returns ``(dx, dweight, dbias)``.
    """
    dy, x, mean, rstd = _check_grad_inputs(dy, x, mean, rstd)
    sum_dy, sum_dy_xhat = _reduce(dy, x, mean, rstd)
    weight = check_param("weight", weight, (x.shape[1],))
    factor = 1.0 / max(x.shape[0] * x.shape[2], 1) if training else 0.0
    return _elemt(dy, x, mean, rstd, weight, sum_dy, sum_dy_xhat, factor), sum_dy_xhat, sum_dy


def batch_norm_rstd(var, eps: float):
    """``rstd = 1 / sqrt(var + eps)`` per channel: float32 ``(C,)`` from the float32 variances ``var``."""
    var = check_array("var", var)
    if var.ndim != 1:
        raise ValueError(f"var must be 1-D (C,), got shape {var.shape}")
    var = check_stat("var", var, var.shape)
    rstd = empty(var.size, PARAM_DTYPE)
    if var.size:
        launch(_rstd_kernel, grid_size(var.size, THREADS), THREADS, (var, check_eps(eps, PARAM_DTYPE), rstd))
    return rstd


def batch_norm_update_running(running_mean, running_var, mean, var, count: int, momentum: float) -> None:
    """Update the running statistics in place, as PyTorch does:
    ``running = (1 - momentum) * running + momentum * batch``, in float32 arithmetic.

    ``mean`` and ``var`` are float32 ``(C,)`` statistics of a batch of ``count`` values per channel (the
    biased variance); the running variance tracks the unbiased one, ``var * count / (count - 1)``.
    The buffers are float16 or float32 ``(C,)``, both of one dtype. One launch for the seven
    elementwise operations this takes with array arithmetic. The buffers are written in place, so
    they must be C-contiguous (a copy would receive the update).
    """
    for name, buffer in (("running_mean", running_mean), ("running_var", running_var)):
        if isinstance(buffer, CudaArray):  # anything else fails the type check below
            check_contiguous(name, buffer)
    running_mean = check_input("running_mean", running_mean, 1, "(C,)")
    running_var = check_like("running_var", running_var, running_mean.shape, running_mean.dtype, of="running_mean")
    check_count(count)
    mean = check_stat("mean", mean, running_mean.shape)
    var = check_stat("var", var, running_mean.shape)
    if mean.size:
        launch(_update_running_kernel, grid_size(mean.size, THREADS), THREADS,
               (running_mean, running_var, mean, var, np.float32(1 - momentum), np.float32(momentum),
                np.float32(count / (count - 1))))
