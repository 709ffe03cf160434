"""2-D max and average pooling on NCHW device arrays, with the semantics of :mod:`tinynorm.kernels.cpu.pool`.

The forward kernels and the average-pooling backward run one thread per output element (forward) or
per input pixel (backward, a gather over the windows that contain the pixel, in ``(oh, ow)`` order):
every thread writes its own element, so there are no atomics and the sums come out the same on every
run, in the order the CPU kernels add them.

Max pooling's backward cannot gather: its signature (the CPU one) gives it ``argmax`` and the input
shape but not the window geometry, so a pixel cannot tell which outputs may point at it. It runs one
thread per (n, c) plane instead, which zeroes its plane of ``dx`` and adds the plane's ``dy`` values at
their ``argmax`` positions in output order: deterministic, but only ``N*C`` threads.
"""
from __future__ import annotations

import math

import numpy as np
from ...backends.cuda.runtime.compiler import cuda

from ..cpu.conv import IntPair, _check_shape
from ..cpu.pool import _pool_geometry
from ._shared import check_array, check_contiguous, empty
from .conv import check_nchw
from ...backends.cuda.runtime.launch import jit, launch
from .strided import THREADS, blocks_for, error_flag


@cuda.jit(device=True)
def _window_span(o, step, pad, kernel, extent):
    """The input positions ``[first, stop)`` of window ``o``, clipped to the input's ``extent``."""
    start = o * step - pad
    return max(start, 0), min(start + kernel, extent)


@cuda.jit(device=True)
def _windows_over(i, step, pad, kernel, count):
    """The range ``[first, stop)`` of windows (of ``count``) that contain input position ``i``."""
    reach = i + pad  # window o covers positions o*step - pad ... o*step - pad + kernel - 1
    first = (max(reach - kernel + 1, 0) + step - 1) // step
    return first, min(reach // step + 1, count)


@jit
def _max_pool_kernel(x, y, argmax, kh, kw, sh, sw, ph, pw, lowest):
    """One thread per output: the window's first maximum (a NaN wins, as in PyTorch) and its flat index,
    starting from ``lowest`` (-inf in x's dtype) like the CPU kernel."""
    channels, h, w = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = y.shape[2], y.shape[3]
    for index in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ow = index % out_w
        oh = (index // out_w) % out_h
        c = (index // (out_w * out_h)) % channels
        n = index // (out_w * out_h * channels)
        h_first, h_stop = _window_span(oh, sh, ph, kh, h)
        w_first, w_stop = _window_span(ow, sw, pw, kw, w)
        best, best_index = lowest, h_first * w + w_first
        for ih in range(h_first, h_stop):
            for iw in range(w_first, w_stop):
                value = x[n, c, ih, iw]
                if value > best or math.isnan(value):
                    best, best_index = value, ih * w + iw
        y[n, c, oh, ow] = best
        argmax[n, c, oh, ow] = best_index


@jit
def _max_pool_backward_kernel(dy, argmax, dx, zero, invalid):
    """One thread per (n, c) plane: zero the plane of ``dx``, then add each ``dy`` at its ``argmax``.

    An index outside the plane is skipped and reported by setting ``invalid[0] = 1``.
    """
    channels, plane_size = dx.shape[1], dx.shape[2] * dx.shape[3]
    w = dx.shape[3]
    for plane in range(cuda.grid(1), dx.shape[0] * channels, cuda.gridsize(1)):
        n, c = plane // channels, plane % channels
        for k in range(plane_size):
            dx[n, c, k // w, k % w] = zero
        for oh in range(dy.shape[2]):
            for ow in range(dy.shape[3]):
                target = argmax[n, c, oh, ow]
                if 0 <= target < plane_size:
                    dx[n, c, target // w, target % w] += dy[n, c, oh, ow]
                else:
                    invalid[0] = 1


@jit
def _avg_pool_kernel(x, y, kh, kw, sh, sw, ph, pw, scale, zero):
    """One thread per output: the window's sum (padding counts as zeros) times ``scale = 1 / (kh*kw)``."""
    channels, h, w = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = y.shape[2], y.shape[3]
    for index in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ow = index % out_w
        oh = (index // out_w) % out_h
        c = (index // (out_w * out_h)) % channels
        n = index // (out_w * out_h * channels)
        h_first, h_stop = _window_span(oh, sh, ph, kh, h)
        w_first, w_stop = _window_span(ow, sw, pw, kw, w)
        total = zero
        for ih in range(h_first, h_stop):
            for iw in range(w_first, w_stop):
                total += x[n, c, ih, iw]
        y[n, c, oh, ow] = total * scale


@jit
def _avg_pool_backward_kernel(dy, dx, kh, kw, sh, sw, ph, pw, scale, zero):
    """One thread per input pixel: ``scale`` times the sum of ``dy`` over the windows that contain it."""
    channels, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    out_h, out_w = dy.shape[2], dy.shape[3]
    for index in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        iw = index % w
        ih = (index // w) % h
        c = (index // (w * h)) % channels
        n = index // (w * h * channels)
        oh_first, oh_stop = _windows_over(ih, sh, ph, kh, out_h)
        ow_first, ow_stop = _windows_over(iw, sw, pw, kw, out_w)
        total = zero
        for oh in range(oh_first, oh_stop):
            for ow in range(ow_first, ow_stop):
                total += dy[n, c, oh, ow] * scale
        dx[n, c, ih, iw] = total


def _check_grad(dy, expected: tuple[int, ...]):
    """Check the upstream gradient's shape; return it on the device."""
    dy = check_nchw("dy", dy)
    if tuple(dy.shape) != expected:
        raise ValueError(f"dy must have shape {expected}, got {tuple(dy.shape)}")
    return dy


def max_pool2d_forward(x, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0):
    """Max over each ``kh x kw`` window of NCHW ``x`` (padding counts as -inf; stride defaults to kernel_size).

    Returns device arrays ``(y, argmax)``, both (N, C, OH, OW); ``argmax`` (int64) is the flat index
    ``h*W + w`` of each window's first maximum in its input plane, for :func:`max_pool2d_backward`.
    """
    x = check_nchw("x", x)
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = empty(tuple(x.shape[:2]) + out_size, dtype=x.dtype)
    argmax = empty(y.shape, dtype=np.int64)
    if y.size:
        launch(_max_pool_kernel, blocks_for(y.size), THREADS,
               (x, y, argmax, kh, kw, sh, sw, ph, pw, x.dtype.type(-np.inf)))
    return y, argmax


def _check_argmax(argmax, x_shape: tuple[int, int, int, int]):
    """``argmax`` on the device after checking it is a C-contiguous integer (N, C, OH, OW) array matching
    ``x_shape`` (the kernel compiles for its integer dtype: int64 from the forward pass)."""
    argmax = check_array("argmax", argmax)
    if argmax.ndim != 4 or tuple(argmax.shape[:2]) != x_shape[:2] or argmax.dtype.kind not in "iu":
        raise ValueError(f"argmax must be an integer (N, C, OH, OW) array matching x_shape {x_shape}, "
                         f"got shape {tuple(argmax.shape)} and dtype {argmax.dtype}")
    check_contiguous("argmax", argmax)
    return argmax


def max_pool2d_backward(dy, argmax, x_shape: tuple[int, int, int, int], checked: bool = False):
    """Gradient of :func:`max_pool2d_forward`: each ``dy`` element goes to its window's ``argmax`` input.

    Checking that every index lies in its plane reads one flag back from the device (a synchronization).
    ``checked=True`` (``argmax`` is max_pool2d_forward's own, as in training) skips reading it, and the
    kernel writes a shared flag nobody reads; it still ignores an index outside its plane rather than
    write outside ``dx``.
    """
    x_shape = _check_shape(tuple(x_shape), "x_shape")
    argmax = _check_argmax(argmax, x_shape)
    dy = _check_grad(dy, tuple(argmax.shape))
    dx = empty(x_shape, dtype=dy.dtype)
    planes = x_shape[0] * x_shape[1]
    if planes and dx.size:
        invalid = error_flag(np.int64, read=not checked)
        launch(_max_pool_backward_kernel, blocks_for(planes), THREADS, (dy, argmax, dx, dy.dtype.type(0), invalid))
        if not checked and invalid.to_numpy()[0]:
            raise ValueError(f"argmax holds indices outside [0, {x_shape[2] * x_shape[3]}) for x_shape {x_shape}")
    return dx


def avg_pool2d_forward(x, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0):
    """Mean over each ``kh x kw`` window of NCHW ``x``, padded zeros included (count_include_pad=True).

    Returns the device array ``y`` of shape (N, C, OH, OW); stride defaults to kernel_size.
    """
    x = check_nchw("x", x)
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = empty(tuple(x.shape[:2]) + out_size, dtype=x.dtype)
    scale = x.dtype.type(1.0 / (kh * kw))
    if y.size:
        launch(_avg_pool_kernel, blocks_for(y.size), THREADS, (x, y, kh, kw, sh, sw, ph, pw, scale, x.dtype.type(0)))
    return y


def avg_pool2d_backward(
    dy,
    x_shape: tuple[int, int, int, int],
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
):
    """Gradient of :func:`avg_pool2d_forward`: each input pixel gets ``dy / (kh*kw)`` of every window over it."""
    x_shape = _check_shape(tuple(x_shape), "x_shape")
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x_shape, kernel_size, stride, padding)
    dy = _check_grad(dy, x_shape[:2] + out_size)
    dx = empty(x_shape, dtype=dy.dtype)
    scale = dy.dtype.type(1.0 / (kh * kw))
    if dx.size:
        launch(_avg_pool_backward_kernel, blocks_for(dx.size), THREADS,
               (dy, dx, kh, kw, sh, sw, ph, pw, scale, dy.dtype.type(0)))
    return dx
