"""GroupNorm on the GPU, with the signatures of :mod:`tinynorm.kernels.cpu.group_norm`.

``x`` is ``(N, C, S)``; the ``C // G * S`` values of one (sample, group) are contiguous. One block per
(sample, group), looping over them (a persistent grid); the block walks its group channel by channel
(threads along the S values of a channel, so loads are coalesced and the per-channel affine
parameters are read once per channel). The forward pass caches the group in shared memory (up to
``CACHE_BYTES``; the rest is read again) for its two statistics passes and the output pass. The
backward pass reduces per channel (this sample's share of dweight/dbias, written to ``part[:, n, c]``)
and then writes dx; the shares are added over samples in a fixed order. InstanceNorm is GroupNorm
with one channel per group.
"""
from __future__ import annotations

import math

import numpy as np
from ..._checks import check_eps
from ...backends.cuda.runtime.compiler import cuda, float32

from ._reduce import WARP_SIZE, block_sum, sum_partials
from ._shared import (
    PARAM_DTYPE,
    check_input,
    check_like,
    check_param,
    check_stat,
    empty,
    grid_size,
    output,
)
from ...backends.cuda.runtime.launch import jit, launch

MAX_THREADS = 256
CACHE_BYTES = 40 * 1024


@jit
def _forward_kernel(x, num_groups, weight, bias, eps, y, mean, rstd, cached):
    """Block per (sample, group): two-pass statistics over the cached group, then the affine output."""
    batch, channels, spatial = x.shape
    per_group = channels // num_groups
    count = float32(per_group * spatial)
    cache = cuda.shared.array(0, float32)
    for unit in range(cuda.blockIdx.x, batch * num_groups, cuda.gridDim.x):
        n = unit // num_groups
        g = unit % num_groups
        total = float32(0)
        for i in range(per_group):
            for k in range(cuda.threadIdx.x, spatial, cuda.blockDim.x):
                v = float32(x[n, g * per_group + i, k])
                if i * spatial + k < cached:
                    cache[i * spatial + k] = v
                total += v
        mu = block_sum(total) / count
        squares = float32(0)
        for i in range(per_group):
            for k in range(cuda.threadIdx.x, spatial, cuda.blockDim.x):
                j = i * spatial + k
                d = (cache[j] if j < cached else float32(x[n, g * per_group + i, k])) - mu
                squares += d * d
        # A sum of squares of deviations: never negative, no clamp needed.
        s = float32(1) / math.sqrt(block_sum(squares) / count + eps)
        for i in range(per_group):
            c = g * per_group + i
            scale = s * weight[c] if weight is not None else s
            shift = bias[c] if bias is not None else float32(0)
            for k in range(cuda.threadIdx.x, spatial, cuda.blockDim.x):
                j = i * spatial + k
                v = cache[j] if j < cached else float32(x[n, c, k])
                y[n, c, k] = (v - mu) * scale + shift
        if cuda.threadIdx.x == 0:
            mean[n, g] = mu
            rstd[n, g] = s


@jit
def _backward_kernel(dy, x, mean, rstd, num_groups, weight, dx, part):
    """Block per (sample, group): per-channel sums (``part[0, n, c] = sum dy * xhat``,
    ``part[1, n, c] = sum dy``), which weighted by ``weight[c]`` give the group's sums for dx."""
    batch, channels, spatial = x.shape
    per_group = channels // num_groups
    count = float32(per_group * spatial)
    for unit in range(cuda.blockIdx.x, batch * num_groups, cuda.gridDim.x):
        n = unit // num_groups
        g = unit % num_groups
        mu = mean[n, g]
        s = rstd[n, g]
        sum_g = float32(0)  # every thread holds the same group totals (block_sum returns them to all)
        sum_g_xhat = float32(0)
        for i in range(per_group):
            c = g * per_group + i
            sum_dy = float32(0)
            sum_dy_xmu = float32(0)
            for k in range(cuda.threadIdx.x, spatial, cuda.blockDim.x):
                d = float32(dy[n, c, k])
                sum_dy += d
                sum_dy_xmu += d * (float32(x[n, c, k]) - mu)
            sum_dy = block_sum(sum_dy)
            sum_dy_xhat = block_sum(sum_dy_xmu) * s
            if cuda.threadIdx.x == 0:
                part[0, n, c] = sum_dy_xhat
                part[1, n, c] = sum_dy
            w = weight[c] if weight is not None else float32(1)
            sum_g += w * sum_dy
            sum_g_xhat += w * sum_dy_xhat
        mean_g = sum_g / count
        mean_g_xhat = sum_g_xhat / count
        for i in range(per_group):
            c = g * per_group + i
            w = weight[c] if weight is not None else float32(1)
            for k in range(cuda.threadIdx.x, spatial, cuda.blockDim.x):
                xhat = (float32(x[n, c, k]) - mu) * s
                dx[n, c, k] = s * (float32(dy[n, c, k]) * w - mean_g - xhat * mean_g_xhat)


def _threads(spatial: int) -> int:
    """Threads per block: one per value of a channel (rounded up to whole warps), at most MAX_THREADS."""
    return min(MAX_THREADS, -(-max(spatial, 1) // WARP_SIZE) * WARP_SIZE)


def _check_x_and_groups(x, num_groups):
    x = check_input("x", x, 3, "(N, C, S)")
    if not isinstance(num_groups, (int, np.integer)) or num_groups <= 0 or x.shape[1] % num_groups:
        raise ValueError(f"num_groups must be a positive integer dividing C={x.shape[1]}, got {num_groups!r}")
    return x


def group_norm_forward(x, num_groups: int, weight, bias, eps: float, out=None) -> tuple:
    """Group-normalize ``x`` (N, C, S): ``y = (x - mean[n, g]) * rstd[n, g] * weight[c] + bias[c]``.

    Channel ``c`` belongs to group ``g = c // (C // num_groups)``; ``mean``/``rstd`` (biased variance,
    ``rstd = 1 / sqrt(var + eps)``) are float32 ``(N, num_groups)``. ``weight``/``bias`` are float32
    ``(C,)`` or None. Returns ``(y, mean, rstd)``; ``y`` is written into ``out`` when given.
    """
    x = _check_x_and_groups(x, num_groups)
    batch, channels, spatial = x.shape
    weight = check_param("weight", weight, (channels,))
    bias = check_param("bias", bias, (channels,))
    eps = check_eps(eps, PARAM_DTYPE)
    y = output(out, x.shape, x.dtype)
    mean, rstd = (empty((batch, num_groups), PARAM_DTYPE) for _ in range(2))
    if x.size:
        cached = min(channels // num_groups * spatial, CACHE_BYTES // 4)
        launch(_forward_kernel, grid_size(batch * num_groups, 1), _threads(spatial),
               (x, num_groups, weight, bias, eps, y, mean, rstd, cached), shared_bytes=cached * 4)
    return y, mean, rstd


def group_norm_backward(dy, x, mean, rstd, num_groups: int, weight) -> tuple:
    """Gradients of :func:`group_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * weight[c]``, per (sample, group):
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``; per channel:
    ``dweight = sum_{n,s}(dy * xhat)``, ``dbias = sum_{n,s}(dy)``. Returns ``(dx, dweight, dbias)``.
    """
    x = _check_x_and_groups(x, num_groups)
    batch, channels, _ = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    mean = check_stat("mean", mean, (batch, num_groups))
    rstd = check_stat("rstd", rstd, (batch, num_groups))
    weight = check_param("weight", weight, (channels,))
    dx = empty(x.shape, x.dtype)
    part = empty((2, batch if x.size else 0, channels), PARAM_DTYPE)
    if x.size:
        launch(_backward_kernel, grid_size(batch * num_groups, 1), _threads(x.shape[2]),
               (dy, x, mean, rstd, num_groups, weight, dx, part))
    dweight, dbias = sum_partials(part).rows()
    return dx, dweight, dbias
