"""2-D max and average pooling on NCHW numpy arrays, with PyTorch's semantics.

Each kernel handles one (H, W) plane at a time; planes are spread over threads with ``prange`` on
large inputs, and since every thread owns whole planes of its output no two threads write the same
element. ``argmax`` holds flat indices ``h*W + w`` into each input plane, like PyTorch's
``return_indices=True``.
"""
import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._shared import use_parallel
from .conv import IntPair, _check_shape, _window_geometry, check_nchw



def _pool_geometry(
    x_shape: tuple[int, ...], kernel_size: IntPair, stride: IntPair | None, padding: IntPair
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Validate pooling arguments like PyTorch; return kernel, stride, padding and output size pairs."""
    stride = kernel_size if stride is None else stride
    geometry = _window_geometry(x_shape[2], x_shape[3], kernel_size, stride, padding)
    kernel, _, pads, _ = geometry
    if pads[0] > kernel[0] // 2 or pads[1] > kernel[1] // 2:
        raise ValueError(f"padding must be at most half of kernel_size {kernel}, got padding {pads}")
    return geometry


def _check_grad(dy: np.ndarray, expected: tuple[int, ...]) -> np.ndarray:
    """Check the upstream gradient's shape and return it C-contiguous."""
    dy = check_nchw("dy", dy)
    if dy.shape != expected:
        raise ValueError(f"dy must have shape {expected}, got {dy.shape}")
    return dy


@njit(fastmath=FASTMATH, inline="always")
def _keep_max(value, index, best, best_index):
    """The running window maximum after ``value`` at ``index``: strict ">" keeps the first maximum on
    ties; a NaN wins and propagates, as in PyTorch."""
    take = (value > best) | np.isnan(value)
    return (value if take else best), (index if take else best_index)


@njit(cache=True, fastmath=FASTMATH)
def _max_pool_plane(x, y, argmax, kh, kw, sh, sw, ph, pw):
    h, w = x.shape
    out_h, out_w = y.shape
    for oh in range(out_h):
        h_first, h_stop = max(oh * sh - ph, 0), min(oh * sh - ph + kh, h)
        for ow in range(out_w):
            w_first, w_stop = max(ow * sw - pw, 0), min(ow * sw - pw + kw, w)
            best, best_index = -np.inf, h_first * w + w_first
            for ih in range(h_first, h_stop):
                for iw in range(w_first, w_stop):
                    best, best_index = _keep_max(x[ih, iw], ih * w + iw, best, best_index)
            y[oh, ow] = best
            argmax[oh, ow] = best_index


@njit(cache=True, fastmath=FASTMATH)
def _max_pool_plane_2x2(x, y, argmax):
    """:func:`_max_pool_plane` for the common 2x2 window, stride 2, no padding: with the window's four
    elements written out, the loop over windows runs 2-3x faster than the general one, whose loops
    over two rows and two columns are too short to run fast (measured: docs/benchmarks.md)."""
    w = x.shape[1]
    for oh in range(y.shape[0]):
        top, bottom = x[2 * oh], x[2 * oh + 1]
        top_start, bottom_start = 2 * oh * w, (2 * oh + 1) * w
        for ow in range(y.shape[1]):
            left = 2 * ow
            best, best_index = top[left], top_start + left
            best, best_index = _keep_max(top[left + 1], top_start + left + 1, best, best_index)
            best, best_index = _keep_max(bottom[left], bottom_start + left, best, best_index)
            best, best_index = _keep_max(bottom[left + 1], bottom_start + left + 1, best, best_index)
            y[oh, ow] = best
            argmax[oh, ow] = best_index


@njit(cache=True, fastmath=FASTMATH)
def _max_pool_backward_plane(dy, argmax, dx):
    dx_flat = dx.reshape(-1)
    for oh in range(dy.shape[0]):
        for ow in range(dy.shape[1]):
            dx_flat[argmax[oh, ow]] += dy[oh, ow]


@njit(cache=True, fastmath=FASTMATH)
def _avg_pool_plane(x, y, kh, kw, sh, sw, ph, pw):
    # count_include_pad=True: the divisor is always kh*kw, padded zeros included.
    h, w = x.shape
    out_h, out_w = y.shape
    scale = 1.0 / (kh * kw)
    for oh in range(out_h):
        h_first, h_stop = max(oh * sh - ph, 0), min(oh * sh - ph + kh, h)
        for ow in range(out_w):
            w_first, w_stop = max(ow * sw - pw, 0), min(ow * sw - pw + kw, w)
            total = 0.0
            for ih in range(h_first, h_stop):
                for iw in range(w_first, w_stop):
                    total += x[ih, iw]
            y[oh, ow] = total * scale


@njit(cache=True, fastmath=FASTMATH)
def _avg_pool_backward_plane(dy, dx, kh, kw, sh, sw, ph, pw):
    h, w = dx.shape
    out_h, out_w = dy.shape
    scale = 1.0 / (kh * kw)
    for oh in range(out_h):
        h_first, h_stop = max(oh * sh - ph, 0), min(oh * sh - ph + kh, h)
        for ow in range(out_w):
            w_first, w_stop = max(ow * sw - pw, 0), min(ow * sw - pw + kw, w)
            share = dy[oh, ow] * scale
            for ih in range(h_first, h_stop):
                for iw in range(w_first, w_stop):
                    dx[ih, iw] += share


@njit(cache=True, fastmath=FASTMATH)
def _max_pool_any_plane(x, y, argmax, kh, kw, sh, sw, ph, pw):
    """One plane by the written-out 2x2 window where the geometry is MaxPool2d(2)'s, else the general loop."""
    if kh == kw == sh == sw == 2 and ph == pw == 0:
        _max_pool_plane_2x2(x, y, argmax)
    else:
        _max_pool_plane(x, y, argmax, kh, kw, sh, sw, ph, pw)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _max_pool_kernel(x, y, argmax, kh, kw, sh, sw, ph, pw, parallel):
    n_channels = x.shape[1]
    if parallel:
        for plane in prange(x.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _max_pool_any_plane(x[n, c], y[n, c], argmax[n, c], kh, kw, sh, sw, ph, pw)
    else:
        for plane in range(x.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _max_pool_any_plane(x[n, c], y[n, c], argmax[n, c], kh, kw, sh, sw, ph, pw)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _max_pool_backward_kernel(dy, argmax, dx, parallel):
    n_channels = dx.shape[1]
    if parallel:
        for plane in prange(dx.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _max_pool_backward_plane(dy[n, c], argmax[n, c], dx[n, c])
    else:
        for plane in range(dx.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _max_pool_backward_plane(dy[n, c], argmax[n, c], dx[n, c])


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _avg_pool_kernel(x, y, kh, kw, sh, sw, ph, pw, parallel):
    n_channels = x.shape[1]
    if parallel:
        for plane in prange(x.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _avg_pool_plane(x[n, c], y[n, c], kh, kw, sh, sw, ph, pw)
    else:
        for plane in range(x.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _avg_pool_plane(x[n, c], y[n, c], kh, kw, sh, sw, ph, pw)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _avg_pool_backward_kernel(dy, dx, kh, kw, sh, sw, ph, pw, parallel):
    n_channels = dx.shape[1]
    if parallel:
        for plane in prange(dx.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _avg_pool_backward_plane(dy[n, c], dx[n, c], kh, kw, sh, sw, ph, pw)
    else:
        for plane in range(dx.shape[0] * n_channels):
            n, c = plane // n_channels, plane % n_channels
            _avg_pool_backward_plane(dy[n, c], dx[n, c], kh, kw, sh, sw, ph, pw)


def max_pool2d_forward(
    x: np.ndarray, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Max over each ``kh x kw`` window of NCHW ``x`` (padding counts as -inf; stride defaults to kernel_size).

    Returns ``(y, argmax)``, both (N, C, OH, OW); ``argmax`` (int64) is the flat index ``h*W + w`` of
    each window's first maximum in its input plane, for :func:`max_pool2d_backward`.
    """
    x = check_nchw("x", x)
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = np.empty(x.shape[:2] + out_size, dtype=x.dtype)
    argmax = np.empty(y.shape, dtype=np.int64)
    _max_pool_kernel(x, y, argmax, kh, kw, sh, sw, ph, pw, use_parallel(x.size))
    return y, argmax


def max_pool2d_backward(dy: np.ndarray, argmax: np.ndarray, x_shape: tuple[int, int, int, int],
                        checked: bool = False) -> np.ndarray:
    """Gradient of :func:`max_pool2d_forward`: each ``dy`` element goes to its window's ``argmax`` input.

    ``checked`` (``argmax`` is max_pool2d_forward's own) lets the CUDA kernel skip its range check and
    the wait for the GPU that reading the result costs; here the check is cheap and always made.
    """
    x_shape = _check_shape(x_shape, "x_shape")
    if not isinstance(argmax, np.ndarray):
        raise TypeError(f"argmax must be a numpy.ndarray, got {type(argmax).__name__}")
    if argmax.dtype.kind not in "iu":  # a float index would be truncated to a wrong position
        raise TypeError(f"argmax must hold integer indices (max_pool2d_forward's int64), got dtype {argmax.dtype}")
    if argmax.ndim != 4 or argmax.shape[:2] != x_shape[:2]:
        raise ValueError(f"argmax must be an (N, C, OH, OW) array matching x_shape {x_shape}, got shape "
                         f"{argmax.shape}")
    dy = _check_grad(dy, argmax.shape)
    argmax = np.ascontiguousarray(argmax, dtype=np.int64)
    plane_size = x_shape[2] * x_shape[3]
    # An index outside the plane would write outside dx: refuse it here rather than corrupt memory.
    if argmax.size and (argmax.min() < 0 or argmax.max() >= plane_size):
        raise ValueError(f"argmax holds indices outside [0, {plane_size}) for x_shape {x_shape}")
    dx = np.zeros(x_shape, dtype=dy.dtype)
    _max_pool_backward_kernel(dy, argmax, dx, use_parallel(dx.size))
    return dx


def avg_pool2d_forward(
    x: np.ndarray, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0
) -> np.ndarray:
    """Mean over each ``kh x kw`` window of NCHW ``x``, padded zeros included (count_include_pad=True).

    Returns ``y`` of shape (N, C, OH, OW); stride defaults to kernel_size, as in PyTorch.
    """
    x = check_nchw("x", x)
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = np.empty(x.shape[:2] + out_size, dtype=x.dtype)
    _avg_pool_kernel(x, y, kh, kw, sh, sw, ph, pw, use_parallel(x.size))
    return y


def avg_pool2d_backward(
    dy: np.ndarray,
    x_shape: tuple[int, int, int, int],
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
) -> np.ndarray:
    """Gradient of :func:`avg_pool2d_forward`: each ``dy`` element spreads ``dy / (kh*kw)`` over its window."""
    x_shape = _check_shape(x_shape, "x_shape")
    (kh, kw), (sh, sw), (ph, pw), out_size = _pool_geometry(x_shape, kernel_size, stride, padding)
    dy = _check_grad(dy, x_shape[:2] + out_size)
    dx = np.zeros(x_shape, dtype=dy.dtype)
    _avg_pool_backward_kernel(dy, dx, kh, kw, sh, sw, ph, pw, use_parallel(dx.size))
    return dx
