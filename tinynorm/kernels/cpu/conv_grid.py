"""The layout kernels of the CPU convolution: NCHW arrays to and from the *grid* layout it reads.

The grid of an input plane is the plane zero padded and split into ``sh * sw`` stride phases: padded
row ``r``, column ``q`` lands in phase ``(r % sh) * sw + q % sw`` at flat position
``(r // sh) * wq + q // sw`` of a ``rows x wq`` phase plane. Then every kernel tap ``t`` of a
convolution reads, for all its outputs at once, one contiguous run of a phase plane: ``run =
grid[n, c, tap_phase[t], tap_offset[t]:tap_offset[t] + lq]`` holds the value under tap ``t`` for
output ``oh * wq + ow`` (the *wide* positions), for every ``oh < OH`` and ``ow < wq``; its columns
``ow >= OW`` wrap into the next row and are skipped. Each phase plane has room for the last tap's run
rounded up to whole blocks of ``conv_implicit.LANES`` positions (and for its last output row's, which
the forward by rows reads), which its kernels read.

``conv_implicit.py`` computes on the runs directly. For the GEMM path, the column matrix (``OH * OW``
columns per sample) is built by plain copies of the runs' rows (``grid_columns``) and folded back by
plain additions (``add_grid_columns``): no index arithmetic per element, and LLVM vectorizes every
loop. The kernels are serial and release the GIL: ``conv.py`` runs them on its threads, each thread on
its own samples, so no two threads write the same element.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ._config import FASTMATH


# ------------------------------------------------------------ NCHW input <-> grid
@njit(cache=True, fastmath=FASTMATH, nogil=True)
def to_grid_planes(x, grid, pt, pl, sh, sw, wq, start, stop):
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


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _from_grid_planes(grid, x, pt, pl, sh, sw, wq, start, stop):
    """Adjoint of :func:`to_grid_planes` (the input gradient): read x's rows back from the grid."""
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


# ------------------------------------------------------------ grid <-> GEMM columns
@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _grid_column_rows(grid, cols, tap_phase, tap_offset, n0, out_h, out_w, wq):
    """Each row ``c * taps + t`` of ``cols``: tap t's values of channel c for samples n0, n0 + 1, ..."""
    taps = tap_phase.size
    per_sample = out_h * out_w
    for k in range(cols.shape[0]):
        c, t = k // taps, k % taps
        for i in range(cols.shape[1] // per_sample):
            source = grid[n0 + i, c, tap_phase[t], tap_offset[t]:]
            target = cols[k, i * per_sample:]
            for oh in range(out_h):
                row_in, row_out = source[oh * wq:], target[oh * out_w:]
                for ow in range(out_w):
                    row_out[ow] = row_in[ow]


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _add_grid_column_planes(cols, grid, tap_phase, tap_offset, n0, out_h, out_w, wq):
    """For each (sample in chunk, c) plane: add each tap's values back, in tap order."""
    taps = tap_phase.size
    n_channels = grid.shape[1]
    per_sample = out_h * out_w
    for plane in range(cols.shape[1] // per_sample * n_channels):
        i, c = plane // n_channels, plane % n_channels
        for t in range(taps):
            target = grid[n0 + i, c, tap_phase[t], tap_offset[t]:]
            source = cols[c * taps + t, i * per_sample:]
            for oh in range(out_h):
                row_in, row_out = source[oh * out_w:], target[oh * wq:]
                for ow in range(out_w):
                    row_out[ow] += row_in[ow]


# ------------------------------------------------------------ GEMM output (O, samples * OH * OW) <-> NCHW
@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _output_planes(product, y, bias, n0):
    """For each (sample in chunk, o) plane: y = product + bias."""
    n_out = y.shape[1]
    per_sample = y.shape[2] * y.shape[3]
    for plane in range(product.shape[1] // per_sample * n_out):
        i, o = plane // n_out, plane % n_out
        shift = bias[o]
        source = product[o, i * per_sample:(i + 1) * per_sample]
        target = y[n0 + i, o].reshape(per_sample)
        for q in range(per_sample):
            target[q] = source[q] + shift


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _output_grad_planes(dy, grid_dy, n0):
    """Adjoint of :func:`_output_planes`: samples n0, ... of dy side by side in the rows of grid_dy."""
    n_out = dy.shape[1]
    per_sample = dy.shape[2] * dy.shape[3]
    for plane in range(grid_dy.shape[1] // per_sample * n_out):
        i, o = plane // n_out, plane % n_out
        source = dy[n0 + i, o].reshape(per_sample)
        target = grid_dy[o, i * per_sample:(i + 1) * per_sample]
        for q in range(per_sample):
            target[q] = source[q]


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
    wide_pixel: np.ndarray  # int64: each wide position's output pixel; -1 where ow >= OW and past the last row

    @property
    def per_sample(self) -> int:
        """Columns of ``cols`` per sample: one per output pixel."""
        return self.out_size[0] * self.out_size[1]


def empty_grid(x_shape: tuple[int, ...], plan: GridPlan, dtype: np.dtype) -> np.ndarray:
    """An uninitialised grid for NCHW inputs of ``x_shape``: shape (N, C, sh * sw, plane_size)."""
    return np.empty((x_shape[0], x_shape[1], plan.stride[0] * plan.stride[1], plan.plane_size), dtype=dtype)


def to_grid(x: np.ndarray, grid: np.ndarray, plan: GridPlan, start: int, stop: int) -> None:
    """Write samples [start, stop) of C-contiguous NCHW ``x`` into their planes of ``grid``."""
    channels = x.shape[1]
    to_grid_planes(x, grid, plan.pad_top, plan.pad_left, *plan.stride, plan.wq, start * channels, stop * channels)


def from_grid(grid: np.ndarray, x: np.ndarray, plan: GridPlan, start: int, stop: int) -> None:
    """Adjoint of :func:`to_grid`: samples [start, stop) of NCHW ``x`` from their grid planes (padding dropped)."""
    channels = x.shape[1]
    _from_grid_planes(grid, x, plan.pad_top, plan.pad_left, *plan.stride, plan.wq, start * channels, stop * channels)


def grid_columns(grid: np.ndarray, cols: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Fill ``cols`` (C * taps, samples * OH * OW) with the tap values of samples ``n0, n0 + 1, ...``."""
    _grid_column_rows(grid, cols, plan.tap_phase, plan.tap_offset, n0, *plan.out_size, plan.wq)


def add_grid_columns(cols: np.ndarray, grid: np.ndarray, n0: int, plan: GridPlan) -> None:
    """Adjoint of :func:`grid_columns`: add each value of ``cols`` back where it was read from."""
    _add_grid_column_planes(cols, grid, plan.tap_phase, plan.tap_offset, n0, *plan.out_size, plan.wq)


def outputs(product: np.ndarray, y: np.ndarray, bias: np.ndarray, n0: int) -> None:
    """Write the GEMM's product (O, samples * OH * OW) of samples ``n0, ...`` into NCHW ``y``, adding ``bias``."""
    _output_planes(product, y, bias, n0)


def output_grads(dy: np.ndarray, grid_dy: np.ndarray, n0: int) -> None:
    """Adjoint of :func:`outputs`: samples ``n0, ...`` of NCHW ``dy`` side by side in ``grid_dy`` (O, samples * OH * OW)."""
    _output_grad_planes(dy, grid_dy, n0)
