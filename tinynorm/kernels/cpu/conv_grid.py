"""The layout kernels of the CPU convolution: NCHW arrays to and from the *grid* layout the GEMMs use.

The grid of an input plane is the plane zero padded and split into ``sh * sw`` stride phases: padded
row ``r``, column ``q`` lands in phase ``(r % sh) * sw + q % sw`` at flat position
``(r // sh) * wq + q // sw`` of a ``rows x wq`` phase plane. Then every kernel tap ``t`` of a
convolution reads, for all its outputs at once, one contiguous run of a phase plane: ``run =
grid[n, c, tap_phase[t], tap_offset[t]:tap_offset[t] + lq]`` holds the value under tap ``t`` for
output ``oh * wq + ow``, for every ``oh < OH`` and ``ow < wq``. Columns ``ow >= OW`` are garbage (they
wrap into the next row) and are dropped when the output leaves the grid; their gradient enters as 0.

So the column matrix of the GEMM is built by plain copies of long runs (``grid_columns``) and folded
back by plain additions (``add_grid_columns``): no index arithmetic per element, and LLVM vectorizes
every loop. Each parallel kernel splits whole planes or whole column rows between threads, so no two
threads write the same element; the serial versions run below the parallel threshold.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._shared import chunk_bounds, num_chunks, use_parallel


# ------------------------------------------------------------ NCHW input <-> grid
@njit(cache=True, fastmath=FASTMATH)
def _to_grid_planes(x, grid, pt, pl, sh, sw, wq, start, stop):
    """Planes [start, stop) of the flattened (n, c) index: zero the grid plane, then place x's rows."""
    n_channels, h = x.shape[1], x.shape[2]
    for plane in range(start, stop):
        n, c = plane // n_channels, plane % n_channels
        planes = grid[n, c]
        planes[:] = 0
        for row in range(h):
            r = row + pt
            if sw == 1:  # a contiguous copy, which LLVM vectorizes
                target = planes[r % sh, (r // sh) * wq + pl:]
                source = x[n, c, row]
                for k in range(source.size):
                    target[k] = source[k]
                continue
            for b in range(sw):  # the input columns of phase b: first, first + sw, ...
                first = (b - pl) % sw
                target = planes[(r % sh) * sw + b, (r // sh) * wq + (first + pl) // sw:]
                source = x[n, c, row, first::sw]
                for k in range(source.size):
                    target[k] = source[k]


@njit(cache=True, fastmath=FASTMATH)
def _from_grid_planes(grid, x, pt, pl, sh, sw, wq, start, stop):
    """Adjoint of :func:`_to_grid_planes` (the input gradient): read x's rows back from the grid."""
    n_channels, h = x.shape[1], x.shape[2]
    for plane in range(start, stop):
        n, c = plane // n_channels, plane % n_channels
        planes = grid[n, c]
        for row in range(h):
            r = row + pt
            if sw == 1:
                source = planes[r % sh, (r // sh) * wq + pl:]
                target = x[n, c, row]
                for k in range(target.size):
                    target[k] = source[k]
                continue
            for b in range(sw):
                first = (b - pl) % sw
                source = planes[(r % sh) * sw + b, (r // sh) * wq + (first + pl) // sw:]
                target = x[n, c, row, first::sw]
                for k in range(target.size):
                    target[k] = source[k]


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _to_grid_parallel(x, grid, pt, pl, sh, sw, wq, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0] * x.shape[1])
        _to_grid_planes(x, grid, pt, pl, sh, sw, wq, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _from_grid_parallel(grid, x, pt, pl, sh, sw, wq, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0] * x.shape[1])
        _from_grid_planes(grid, x, pt, pl, sh, sw, wq, start, stop)


# ------------------------------------------------------------ grid <-> GEMM columns
@njit(cache=True, fastmath=FASTMATH)
def _grid_column_rows(grid, cols, tap_phase, tap_offset, n0, out_h, out_w, wq, start, stop):
    """Rows [start, stop) of ``cols`` (row ``c * taps + t``): tap t's values for samples n0, n0 + 1, ..."""
    taps = tap_phase.size
    per_sample = out_h * out_w
    for k in range(start, stop):
        c, t = k // taps, k % taps
        for i in range(cols.shape[1] // per_sample):
            source = grid[n0 + i, c, tap_phase[t], tap_offset[t]:]
            target = cols[k, i * per_sample:]
            for oh in range(out_h):
                row_in, row_out = source[oh * wq:], target[oh * out_w:]
                for ow in range(out_w):
                    row_out[ow] = row_in[ow]


@njit(cache=True, fastmath=FASTMATH)
def _add_grid_column_planes(cols, grid, tap_phase, tap_offset, n0, out_h, out_w, wq, start, stop):
    """Planes [start, stop) of the flattened (sample in chunk, c) index: add each tap's values back, in tap order."""
    taps = tap_phase.size
    n_channels = grid.shape[1]
    per_sample = out_h * out_w
    for plane in range(start, stop):
        i, c = plane // n_channels, plane % n_channels
        for t in range(taps):
            target = grid[n0 + i, c, tap_phase[t], tap_offset[t]:]
            source = cols[c * taps + t, i * per_sample:]
            for oh in range(out_h):
                row_in, row_out = source[oh * out_w:], target[oh * wq:]
                for ow in range(out_w):
                    row_out[ow] += row_in[ow]


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _grid_columns_parallel(grid, cols, tap_phase, tap_offset, n0, out_h, out_w, wq, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, cols.shape[0])
        _grid_column_rows(grid, cols, tap_phase, tap_offset, n0, out_h, out_w, wq, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _add_grid_columns_parallel(cols, grid, tap_phase, tap_offset, n0, out_h, out_w, wq, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, cols.shape[1] // (out_h * out_w) * grid.shape[1])
        _add_grid_column_planes(cols, grid, tap_phase, tap_offset, n0, out_h, out_w, wq, start, stop)


# ------------------------------------------------------------ GEMM output (O, samples * OH * OW) <-> NCHW
@njit(cache=True, fastmath=FASTMATH)
def _output_planes(product, y, bias, n0, start, stop):
    """Planes [start, stop) of the flattened (sample in chunk, o) index: y = product + bias."""
    n_out = y.shape[1]
    per_sample = y.shape[2] * y.shape[3]
    for plane in range(start, stop):
        i, o = plane // n_out, plane % n_out
        shift = bias[o]
        source = product[o, i * per_sample:(i + 1) * per_sample]
        target = y[n0 + i, o].reshape(per_sample)
        for q in range(per_sample):
            target[q] = source[q] + shift


@njit(cache=True, fastmath=FASTMATH)
def _output_grad_planes(dy, grid_dy, n0, start, stop):
    """Adjoint of :func:`_output_planes`: samples n0, ... of dy side by side in the rows of grid_dy."""
    n_out = dy.shape[1]
    per_sample = dy.shape[2] * dy.shape[3]
    for plane in range(start, stop):
        i, o = plane // n_out, plane % n_out
        source = dy[n0 + i, o].reshape(per_sample)
        target = grid_dy[o, i * per_sample:(i + 1) * per_sample]
        for q in range(per_sample):
            target[q] = source[q]


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _output_parallel(product, y, bias, n0, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, product.shape[1] // (y.shape[2] * y.shape[3]) * y.shape[1])
        _output_planes(product, y, bias, n0, start, stop)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _output_grad_parallel(dy, grid_dy, n0, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, grid_dy.shape[1] // (dy.shape[2] * dy.shape[3]) * dy.shape[1])
        _output_grad_planes(dy, grid_dy, n0, start, stop)


# ------------------------------------------------------------ the wrappers conv.py calls
class GridPlan(NamedTuple):
    """Where a convolution's input lands in the grid and where each tap reads it (see the module docstring)."""
    pad_top: int
    pad_left: int
    stride: tuple[int, int]
    wq: int  # width of a phase plane
    plane_size: int  # elements per phase plane, with room for the last tap's overrun
    out_size: tuple[int, int]
    tap_phase: np.ndarray  # int64, one per tap (i, j), in weight order
    tap_offset: np.ndarray

    @property
    def per_sample(self) -> int:
        """Columns of ``cols`` per sample: one per output pixel."""
        return self.out_size[0] * self.out_size[1]


def to_grid(x: np.ndarray, plan: GridPlan) -> np.ndarray:
    """The grid of C-contiguous NCHW ``x``: shape (N, C, sh * sw, plane_size)."""
    (sh, sw) = plan.stride
    grid = np.empty((x.shape[0], x.shape[1], sh * sw, plan.plane_size), dtype=x.dtype)
    args = (plan.pad_top, plan.pad_left, sh, sw, plan.wq)
    if use_parallel(grid.size):
        _to_grid_parallel(x, grid, *args, num_chunks(x.shape[0] * x.shape[1]))
    else:
        _to_grid_planes(x, grid, *args, 0, x.shape[0] * x.shape[1])
    return grid


def from_grid(grid: np.ndarray, x_shape: tuple[int, ...], plan: GridPlan) -> np.ndarray:
    """Adjoint of :func:`to_grid`: the NCHW array whose grid is ``grid`` (padding positions dropped)."""
    x = np.empty(x_shape, dtype=grid.dtype)
    (sh, sw) = plan.stride
    args = (plan.pad_top, plan.pad_left, sh, sw, plan.wq)
    if use_parallel(grid.size):
        _from_grid_parallel(grid, x, *args, num_chunks(x_shape[0] * x_shape[1]))
    else:
        _from_grid_planes(grid, x, *args, 0, x_shape[0] * x_shape[1])
    return x


def grid_columns(grid: np.ndarray, cols: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Fill ``cols`` (C * taps, samples * OH * OW) with the tap values of samples ``n0, n0 + 1, ...``."""
    args = (plan.tap_phase, plan.tap_offset, n0, *plan.out_size, plan.wq)
    if use_parallel(cols.size):
        _grid_columns_parallel(grid, cols, *args, num_chunks(cols.shape[0]))
    else:
        _grid_column_rows(grid, cols, *args, 0, cols.shape[0])


def add_grid_columns(cols: np.ndarray, grid: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Adjoint of :func:`grid_columns`: add each value of ``cols`` back where it was read from."""
    args = (plan.tap_phase, plan.tap_offset, n0, *plan.out_size, plan.wq)
    planes = cols.shape[1] // plan.per_sample * grid.shape[1]
    if use_parallel(cols.size):
        _add_grid_columns_parallel(cols, grid, *args, num_chunks(planes))
    else:
        _add_grid_column_planes(cols, grid, *args, 0, planes)


def outputs(product: np.ndarray, y: np.ndarray, bias: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Write the GEMM's product (O, samples * OH * OW) of samples ``n0, ...`` into NCHW ``y``, adding ``bias``."""
    planes = product.shape[1] // plan.per_sample * y.shape[1]
    if use_parallel(product.size):
        _output_parallel(product, y, bias, n0, num_chunks(planes))
    else:
        _output_planes(product, y, bias, n0, 0, planes)


def output_grads(dy: np.ndarray, grid_dy: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Adjoint of :func:`outputs`: samples ``n0, ...`` of NCHW ``dy`` side by side in ``grid_dy`` (O, samples * OH * OW)."""
    planes = grid_dy.shape[1] // plan.per_sample * dy.shape[1]
    if use_parallel(grid_dy.size):
        _output_grad_parallel(dy, grid_dy, n0, num_chunks(planes))
    else:
        _output_grad_planes(dy, grid_dy, n0, 0, planes)
