"""2-D convolution on NCHW device arrays, with the signatures of :mod:`tinynorm.kernels.cpu.conv`.

The same plan as on the CPU: ``im2col`` unrolls every receptive field into a column of
``cols (N, C*kh*kw, OH*OW)`` (row ``(c*kh + i)*kw + j``, column ``oh*OW + ow``), so the convolution is one
GEMM per sample, ``weight (O, C*kh*kw) @ cols[n]``, already in NCHW order. The backward pass is two more
GEMMs (``dweight = sum_n dy[n] @ cols[n]^T``, ``dcols = weight^T @ dy``) and ``col2im``, the adjoint of
``im2col``, folding ``dcols`` back onto the input.

Every result is deterministic (bit-identical on every run, no atomics):

* ``col2im`` is a gather: one thread per input pixel adds the (at most ``kh*kw``) columns that read it,
  in ``(i, j)`` order, the order in which the CPU kernel adds them.
* The sums over the batch (``dweight``) and over batch and positions (``dbias``) add their terms in a
  fixed order (:func:`sum_batches`, :func:`channel_sums`).

The GEMMs are :func:`tinynorm.kernels.cuda.matmul.matmul_strided`, which reads its operands through
strides: the transposed and batch-broadcast operands cost no copy. Arrays are float32 or float64, like
the CPU kernels, and the kernels here compute in the arrays' dtype (constants reach them as arguments
of that dtype, never as Python floats).
"""
from __future__ import annotations

from functools import cache

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, from_dtype, types

from ..cpu.conv import IntPair, _check_shape, _window_geometry, check_dy_fits, conv2d_output_size
from ._shared import check_array, check_contiguous, empty
from ...backends.cuda.array import CudaArray
from ...backends.cuda.runtime.launch import jit, launch
from .matmul import matmul_strided
from .strided import THREADS, blocks_for

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_nchw(name: str, array: object) -> CudaArray:
    """``array``, C-contiguous (a copy when strided), after checking it is a float32/float64 NCHW CudaArray
    (the CPU's :func:`tinynorm.kernels.cpu.conv.check_nchw` on the device)."""
    array = check_array(name, array)
    if array.ndim != 4:
        raise ValueError(f"{name} must be 4-D (N, C, H, W), got shape {tuple(array.shape)}")
    if array.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32 or float64, got {array.dtype}")
    return array


# ----------------------------------------------------------------------------------------- kernels
@jit
def _im2col_kernel(x, cols, kh, kw, sh, sw, ph, pw, out_w):
    """One thread per element of ``cols``: the input value its window position reads, or a padding zero."""
    h, w = x.shape[2], x.shape[3]
    rows, length = cols.shape[1], cols.shape[2]
    for index in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
        column = index % length
        row = (index // length) % rows
        n = index // (length * rows)
        c, offset = row // (kh * kw), row % (kh * kw)
        ih = (column // out_w) * sh - ph + offset // kw
        iw = (column % out_w) * sw - pw + offset % kw
        if 0 <= ih < h and 0 <= iw < w:
            cols[n, row, column] = x[n, c, ih, iw]
        else:
            cols[n, row, column] = 0


@jit
def _col2im_kernel(cols, dx, kh, kw, sh, sw, ph, pw, out_w, zero):
    """One thread per input pixel: the sum of the ``cols`` entries that :func:`_im2col_kernel` filled
    from it, over kernel offsets ``(i, j)`` in row-major order. ``zero`` has the arrays' dtype."""
    channels, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    out_h = cols.shape[2] // out_w
    for index in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        iw = index % w
        ih = (index // w) % h
        c = (index // (w * h)) % channels
        n = index // (w * h * channels)
        total = zero
        for i in range(kh):
            top = ih + ph - i  # oh * sh for the window whose row i is this pixel's row
            if top < 0 or top % sh != 0 or top // sh >= out_h:
                continue
            for j in range(kw):
                left = iw + pw - j
                if left >= 0 and left % sw == 0 and left // sw < out_w:
                    total += cols[n, (c * kh + i) * kw + j, (top // sh) * out_w + left // sw]
        dx[n, c, ih, iw] = total


@jit
def _add_bias_kernel(y, bias):
    """``y[n, o, :] += bias[o]`` for ``y`` of shape (N, O, L), in place."""
    channels, length = y.shape[1], y.shape[2]
    for index in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        o = (index // length) % channels
        y[index // (length * channels), o, index % length] += bias[o]


@jit
def _sum_batches_kernel(a, out, zero):
    """``out[j] = sum_b a[b, j]``, one thread per column, adding ``b = 0, 1, ...`` in order."""
    for j in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        total = zero
        for b in range(a.shape[0]):
            total += a[b, j]
        out[j] = total


@cache
def _channel_sums_kernel(dtype: types.Float):
    """The kernel of :func:`channel_sums` for one Numba float dtype (its shared memory needs the dtype
    at compile time). Block ``o`` sums channel ``o``; launch it with ``THREADS`` threads per block."""

    @jit
    def kernel(a, out):
        partial = cuda.shared.array(THREADS, dtype)
        o, t = cuda.blockIdx.x, cuda.threadIdx.x
        length = a.shape[2]
        total = dtype(0)
        for k in range(t, a.shape[0] * length, THREADS):  # thread t always adds the same terms, in order
            total += a[k // length, o, k % length]
        partial[t] = total
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:  # a fixed tree: partial[t] += partial[t + step] for step = 128, 64, ..., 1
            if t < step:
                partial[t] += partial[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[o] = partial[0]

    return kernel


# ------------------------------------------------------------------------------------- wrappers
def _zero(array) -> np.generic:
    """A zero of ``array``'s dtype, to start a kernel's sums in that dtype."""
    return array.dtype.type(0)


def sum_batches(a):
    """``a.sum(axis=0)`` of a C-contiguous (B, ...) device array, adding the batches in order."""
    out = empty(a.shape[1:], dtype=a.dtype)
    if out.size:
        flat = a.subarray(0, (a.shape[0], out.size))
        launch(_sum_batches_kernel, blocks_for(out.size), THREADS, (flat, out.subarray(0, out.size), _zero(a)))
    return out


def channel_sums(a):
    """``a.sum(axis=(0, 2))`` of a C-contiguous (N, C, L) device array: one block per channel, each
    thread adding a fixed set of terms, then a fixed tree across the block (deterministic)."""
    out = empty(a.shape[1], dtype=a.dtype)
    if out.size:
        kernel = _channel_sums_kernel(from_dtype(a.dtype))
        launch(kernel, out.size, THREADS, (a, out))
    return out


def im2col(x, kernel_size: IntPair, stride: IntPair = 1, padding: IntPair = 0):
    """Unroll every ``kh x kw`` receptive field of NCHW ``x`` (zero padded) into a column.

    Returns ``cols`` of shape ``(N, C*kh*kw, OH*OW)`` and x's dtype (a device array), such that
    ``weight.reshape(O, C*kh*kw) @ cols[n]`` is the convolution of sample ``n``.
    """
    x = check_nchw("x", x)
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (out_h, out_w) = _window_geometry(h, w, kernel_size, stride, padding)
    cols = empty((n, c * kh * kw, out_h * out_w), dtype=x.dtype)
    if cols.size:
        launch(_im2col_kernel, blocks_for(cols.size), THREADS, (x, cols, kh, kw, sh, sw, ph, pw, out_w))
    return cols


def _check_cols(cols, input_shape: tuple[int, int, int, int], kernel: tuple[int, int], out_size: tuple[int, int]):
    """Check that ``cols`` is what :func:`im2col` returns for ``input_shape``; return it on the device."""
    cols = check_array("cols", cols)
    if cols.dtype not in FLOAT_DTYPES:
        raise TypeError(f"cols must be a float32 or float64 array, got {cols.dtype}")
    expected = (input_shape[0], input_shape[1] * kernel[0] * kernel[1], out_size[0] * out_size[1])
    if tuple(cols.shape) != expected:
        raise ValueError(f"cols must have shape {expected} for input shape {input_shape}, got {tuple(cols.shape)}")
    check_contiguous("cols", cols)
    return cols


def col2im(
    cols,
    input_shape: tuple[int, int, int, int],
    kernel_size: IntPair,
    stride: IntPair = 1,
    padding: IntPair = 0,
):
    """Adjoint of :func:`im2col`: each input position receives the sum of the column entries read from it.

    ``cols`` has shape ``(N, C*kh*kw, OH*OW)``; returns ``dx`` of ``input_shape`` (N, C, H, W).
    """
    input_shape = _check_shape(tuple(input_shape), "input_shape")
    (kh, kw), (sh, sw), (ph, pw), out_size = _window_geometry(
        input_shape[2], input_shape[3], kernel_size, stride, padding)
    cols = _check_cols(cols, input_shape, (kh, kw), out_size)
    dx = empty(input_shape, dtype=cols.dtype)
    if dx.size:
        launch(_col2im_kernel, blocks_for(dx.size), THREADS,
               (cols, dx, kh, kw, sh, sw, ph, pw, out_size[1], _zero(cols)))
    return dx


def _check_weight(weight, x_channels: int, dtype: np.dtype):
    """Check a conv weight (O, C, kh, kw) against the input's channel count and dtype."""
    weight = check_nchw("weight", weight)
    if weight.shape[1] != x_channels:
        raise ValueError(f"weight expects {weight.shape[1]} input channels (shape {tuple(weight.shape)}), "
                         f"but the input has {x_channels} channels")
    if weight.dtype != dtype:
        raise TypeError(f"weight dtype {weight.dtype} does not match the input dtype {dtype}")
    return weight


def _check_bias(bias, out_channels: int, dtype: np.dtype):
    """Check an optional conv bias (O,); return it on the device (or None)."""
    if bias is None:
        return None
    bias = check_array("bias", bias)
    if tuple(bias.shape) != (out_channels,):
        raise ValueError(f"bias must be an array of shape ({out_channels},), got {tuple(bias.shape)}")
    if bias.dtype != dtype:
        raise TypeError(f"bias dtype {bias.dtype} does not match the input dtype {dtype}")
    return bias


def _batched_gemm(a, a_strides: tuple[int, int, int], b, b_strides: tuple[int, int, int],
                  out_shape: tuple[int, int, int], inner: int):
    """``out[n] = A[n] @ B[n]`` for ``n < out_shape[0]``, a new (batch, M, N) array of a's dtype.

    ``A`` (M x ``inner``) and ``B`` (``inner`` x N) are the C-contiguous arrays ``a`` and ``b`` read
    through element strides of (batch, row, column): swapped strides read a transpose, batch stride 0
    reuses one matrix for every ``n``. Nothing is copied.
    """
    out = empty(out_shape, dtype=a.dtype)
    matmul_strided(a.subarray(0, a.size), a_strides, b.subarray(0, b.size), b_strides, (out_shape[0],),
                   inner, out)
    return out


def conv2d_forward(x, weight, bias=None, stride: IntPair = 1, padding: IntPair = 0):
    """Convolution of NCHW ``x`` with ``weight`` (O, C, kh, kw) plus optional ``bias`` (O,).

    Returns device arrays ``(y, cols)``: ``y`` of shape (N, O, OH, OW), and the im2col ``cols`` that
    :func:`conv2d_backward` needs for the weight gradient.
    """
    x = check_nchw("x", x)
    weight = _check_weight(weight, x.shape[1], x.dtype)
    out_channels, _, kh, kw = weight.shape
    bias = _check_bias(bias, out_channels, x.dtype)
    cols = im2col(x, (kh, kw), stride, padding)
    out_h, out_w = conv2d_output_size(x.shape[2], x.shape[3], (kh, kw), stride, padding)
    batch, rows, length = cols.shape  # rows = C*kh*kw, length = OH*OW
    # y[n] = weight (O, rows) @ cols[n]: the weight is broadcast over n (batch stride 0).
    y = _batched_gemm(weight, (0, rows, 1), cols, (rows * length, length, 1), (batch, out_channels, length), rows)
    if bias is not None and y.size:
        launch(_add_bias_kernel, blocks_for(y.size), THREADS, (y, bias))
    return y.subarray(0, (x.shape[0], out_channels, out_h, out_w)), cols


def conv2d_backward(dy, cols, x_shape: tuple[int, int, int, int], weight, stride: IntPair = 1,
                    padding: IntPair = 0, needs_input_grad: bool = True, needs_bias_grad: bool = True):
    """Gradients of :func:`conv2d_forward` given the upstream gradient ``dy`` (N, O, OH, OW).

    Returns device arrays ``(dx, dweight, dbias)``; ``dx`` is None when ``needs_input_grad`` is False,
    ``dbias`` (the sum of ``dy`` over N, OH, OW) None when ``needs_bias_grad`` is False.
    """
    x_shape = _check_shape(tuple(x_shape), "x_shape")
    dy = check_nchw("dy", dy)
    weight = _check_weight(weight, x_shape[1], dy.dtype)
    out_channels, _, kh, kw = weight.shape
    out_size = conv2d_output_size(x_shape[2], x_shape[3], (kh, kw), stride, padding)
    cols = _check_cols(cols, x_shape, (kh, kw), out_size)
    check_dy_fits(dy, cols, (x_shape[0], out_channels, *out_size))
    batch, rows, length = cols.shape  # rows = C*kh*kw, length = OH*OW
    dy_rows = dy.subarray(0, (batch, out_channels, length))
    # dweight = sum_n dy[n] @ cols[n]^T: the transpose is cols read with swapped strides.
    products = _batched_gemm(dy, (out_channels * length, length, 1), cols, (rows * length, 1, length),
                             (batch, out_channels, rows), length)
    dweight = sum_batches(products).subarray(0, weight.shape)
    dbias = channel_sums(dy_rows) if needs_bias_grad else None
    dx = None
    if needs_input_grad:
        # dcols[n] = weight^T @ dy[n]: weight read transposed, and broadcast over n (batch stride 0).
        dcols = _batched_gemm(weight, (0, 1, rows), dy, (out_channels * length, length, 1), cols.shape, out_channels)
        dx = col2im(dcols, x_shape, (kh, kw), stride, padding)
    return dx, dweight, dbias
