"""The float32 convolution as register-blocked products read straight from the grid (an implicit GEMM).

Every kernel here has one inner step, :func:`_multiply_add`: an accumulator block of ROWS x lanes
values, kept in registers, gains ``a[i] * b[j]`` for ROWS broadcast values ``a`` and lanes contiguous
values ``b``. The three products of a convolution all take that form without any column matrix:

- forward: rows are output channels (``a``: the weights of one input channel and tap), lanes are output
  positions (``b``: the tap's contiguous run of the input's grid, ``conv_grid.py``); or, on small
  images, the roles turned (``BY_CHANNELS``): rows are ROWS positions of one output row (``a``: ROWS
  consecutive values of the run), lanes are output channels (``b``: the weights of the input channel
  and tap);
- input gradient: rows are input channels (``a``: the transposed weights), lanes are positions of a
  grid phase plane (``b``: a run of ``dy`` laid out like the grid's output positions, shifted back by
  the tap's offset); or, on small images, by channels: rows are ROWS positions of one row of the phase
  plane (``a``: consecutive values of that run), lanes are input channels;
- weight gradient: rows are (input channel, tap) rows of the weight (``a``: one value of each row's
  grid run), lanes are output channels (``b``: a row of ``dy`` transposed to positions x channels).

Outputs are computed on the grid's *wide* positions ``oh * wq + ow`` (``ow < wq``): the columns
``ow >= OW`` wrap into the next row and are dropped on output (zeros in ``dy``), and the last block of
positions is padded up to a whole block (the grid plan leaves room for one of LANES). Channel counts
are padded up to a multiple of ROWS with zero weights (the weight gradient: rows repeating the last
one, and output channels up to a whole block as zero columns of ``dy``), and the padded results are
sliced away. Each product's block is LANES = 32 wide, or NARROW_LANES = 16 where that saves a tenth of
the padding (:func:`lanes_for`): the width reaches the kernels as a tuple's length (``_stack.py``).
The input gradient meets the zeros of ``dy`` around its output positions, so it needs finite weights
(``0 * inf`` is NaN): conv.py takes the GEMM path for a backward with a non-finite weight.

Design, measured (docs/benchmarks.md): 8 x 32 float32 accumulators are 16 AVX-512 registers, which
leaves registers for the broadcasts and loads (the kernels ask LLVM for 512-bit vectors,
``_vector_width.py``: in 256-bit ones the block spills); LLVM keeps the block in registers only when
the rows are written out one by one (a loop over the rows became gathers and scatters). The forward
walks the blocks of output channels in its outer loop and the positions in the inner one, so that its
stores go to ROWS output planes at a time rather than to all of them (the sample's grid, reread by
each block, stays in the L2 cache); with short weight rows (a first layer's), its blocks of positions
lie within one output row, each block row stored as one contiguous run (``by_rows``), since a block of
a few products cannot pay for the wide positions' scattered stores. On small images the wide
positions' dropped columns are a large share (16 of 80 at 8 x 8), and the forward and the input
gradient take their blocks by channels where those compute the fewest values
(:func:`forward_order`, :func:`input_gradient_by_channels`), the same sums in the same order. The forward builds each
sample's grid just before its outputs, and the backward takes one sample at a time through its
layouts of ``dy`` and both gradients, so that a sample's data stay in the L2 cache. On one core the
forward's products run at 80-105 GFLOP/s where OpenBLAS reaches 57-84 on the column matrices' shapes,
and no column matrix is written. Compiled for AVX2 (16 vector
registers, so the block spills) the kernels still ran ahead of the GEMM path. Ranges of samples run on
Numba's threads (``prange``), the pool of the other parallel kernels, whose threads are still awake
when a convolution follows a norm or a ReLU, where a Python thread had to be woken for each call.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._config import FASTMATH
from ._stack import stack_array, width
from ._vector_width import wide_vectors
from .conv_grid import GridPlan, to_grid_planes

ROWS = 8  # accumulator rows
LANES = 32  # accumulator values per row: two AVX-512 registers of float32
NARROW_LANES = 16  # one register: where it computes under (1 - NARROW_WASTE) of the lanes LANES would
NARROW_WASTE = 0.1

# Orders of the forward's blocks (forward_order).
WIDE, BY_ROWS, BY_CHANNELS = 0, 1, 2
# The forward takes its blocks by channels where they compute under this share of the values the wide
# positions' blocks would: per value computed they run a little slower (measured: docs/benchmarks.md).
BY_CHANNELS_SHARE = 0.85


def padded(size: int, multiple: int) -> int:
    """``size`` rounded up to a multiple of ``multiple``."""
    return -(-size // multiple) * multiple


def lanes_for(count: int) -> int:
    """The block width for ``count`` lanes of work (positions, or output channels): LANES, or
    NARROW_LANES where blocks of it compute under (1 - NARROW_WASTE) of the lanes (padding included)
    that blocks of LANES would. A narrow block runs a little slower per lane (half the values per
    broadcast) but an 8x8 image's 80 wide positions, or 16 output channels, fill it exactly
    (measured: docs/benchmarks.md)."""
    if padded(count, NARROW_LANES) < (1 - NARROW_WASTE) * padded(count, LANES):
        return NARROW_LANES
    return LANES


@njit(fastmath=FASTMATH, nogil=True)
def _multiply_add(acc, a, b, lanes):
    """``acc[i, j] += a[i] * b[j]`` for the ROWS x ``len(lanes)`` block: the rows are written out so
    that LLVM keeps ``acc`` in registers and vectorizes each row."""
    wide_vectors()
    a0, a1, a2, a3, a4, a5, a6, a7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    for j in range(len(lanes)):
        value = b[j]
        acc[0, j] += a0 * value
        acc[1, j] += a1 * value
        acc[2, j] += a2 * value
        acc[3, j] += a3 * value
        acc[4, j] += a4 * value
        acc[5, j] += a5 * value
        acc[6, j] += a6 * value
        acc[7, j] += a7 * value


@njit(fastmath=FASTMATH, nogil=True, inline="always")
def _block_products(acc, weights, grid, row_start, q0, lanes):
    """``acc`` (ROWS x lanes) set to the forward's sums over every weight row k (input channel, tap) for
    the wide positions from ``q0``: ``weights[k]`` times the run of one sample's flattened ``grid``
    that starts at ``row_start[k]``."""
    acc[:] = 0
    position = np.uint64(q0)  # unsigned, like row_start: see _weight_grad_sample
    for k in range(weights.shape[0]):
        _multiply_add(acc, weights[k], grid[row_start[k] + position:], lanes)


@njit(fastmath=FASTMATH, nogil=True)
def _forward_sample(grid, weight_blocks, bias, y, row_start, wide_pixel, lanes):
    """``y[o, pixel]`` (O_pad, OH * OW) of one sample's flattened ``grid``.

    ``weight_blocks[block, k, i]`` is the weight of output channel ``block * ROWS + i`` in weight row k;
    ``wide_pixel[q]`` is the output pixel of wide position q, or -1 for a dropped one (its size a
    multiple of ``len(lanes)``).
    """
    wide_vectors()
    for block in range(weight_blocks.shape[0]):  # outermost: the block's ROWS output planes fill in turn
        weights = weight_blocks[block]
        for q0 in range(0, wide_pixel.size, len(lanes)):
            acc = stack_array(ROWS, lanes, y.dtype)
            _block_products(acc, weights, grid, row_start, q0, lanes)
            first = block * ROWS
            for j in range(len(lanes)):
                pixel = wide_pixel[q0 + j]
                if pixel >= 0:
                    for i in range(ROWS):
                        y[first + i, pixel] = acc[i, j] + bias[first + i]


@njit(fastmath=FASTMATH, nogil=True)
def _forward_sample_by_rows(grid, weight_blocks, bias, y, row_start, out_w, wq, lanes):
    """:func:`_forward_sample` with each block of positions inside one output row (``ow0 <= ow < ow0 +
    len(lanes)``, the lanes past OW computed and dropped), so that each of its rows goes out as one
    contiguous run of ``y``: the write-out of short weight rows, where a block gains only a few
    products, then costs little."""
    wide_vectors()
    for block in range(weight_blocks.shape[0]):
        weights = weight_blocks[block]
        for oh in range(y.shape[1] // out_w):
            for ow0 in range(0, out_w, len(lanes)):
                q0, pixel, count = oh * wq + ow0, oh * out_w + ow0, min(len(lanes), out_w - ow0)
                acc = stack_array(ROWS, lanes, y.dtype)
                _block_products(acc, weights, grid, row_start, q0, lanes)
                first = block * ROWS
                for i in range(ROWS):
                    row, shift = y[first + i, pixel:pixel + count], bias[first + i]
                    for j in range(count):
                        row[j] = acc[i, j] + shift


@njit(fastmath=FASTMATH, nogil=True)
def _forward_sample_by_channels(grid, channel_blocks, bias, y, row_start, out_w, wq, lanes):
    """:func:`_forward_sample` with the roles turned: the block's rows are ROWS positions of one output
    row, its lanes output channels (``channel_blocks[block, k, j]``, the weight of output channel
    ``block * len(lanes) + j`` in weight row k). No wide positions are computed and dropped, which on
    small images are a fifth of them (8 x 10 for 8 x 8 outputs)."""
    wide_vectors()
    for block in range(channel_blocks.shape[0]):
        weights, first = channel_blocks[block], block * len(lanes)
        for oh in range(y.shape[1] // out_w):
            for ow0 in range(0, out_w, ROWS):
                acc = stack_array(ROWS, lanes, y.dtype)
                acc[:] = 0
                position = np.uint64(oh * wq + ow0)
                for k in range(weights.shape[0]):  # ROWS consecutive values of a run times a weight row
                    _multiply_add(acc, grid[row_start[k] + position:], weights[k], lanes)
                pixel = oh * out_w + ow0
                for i in range(min(ROWS, out_w - ow0)):
                    for j in range(len(lanes)):
                        y[first + j, pixel + i] = acc[i, j] + bias[first + j]


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _forward_samples(x, grid, grid_layout, weight_blocks, bias, y, row_start, wide_pixel, out_w, order, lanes,
                     start, stop):
    """Samples [start, stop): each one's grid (``grid_layout``: to_grid_planes' pad_top, pad_left, sh,
    sw, wq), then its outputs while the grid is still in the cache, in the ``order`` of
    :func:`forward_order`."""
    channels, wq = x.shape[1], grid_layout[4]
    for n in range(start, stop):
        to_grid_planes(x, grid, *grid_layout, n * channels, (n + 1) * channels)
        sample = grid[n].reshape(-1)
        if order == BY_CHANNELS:
            _forward_sample_by_channels(sample, weight_blocks, bias, y[n], row_start, out_w, wq, lanes)
        elif order == BY_ROWS:
            _forward_sample_by_rows(sample, weight_blocks, bias, y[n], row_start, out_w, wq, lanes)
        else:
            _forward_sample(sample, weight_blocks, bias, y[n], row_start, wide_pixel, lanes)


@njit(fastmath=FASTMATH, nogil=True)
def _dy_layouts(dy, wq, front, dy_wide, dy_t):
    """One sample's ``dy`` (O, OH, OW) into ``dy_t`` (wide positions, O_pad) and, unless it is empty,
    ``dy_wide`` (O, front zeros + wide positions). Every sample writes the same elements, so the
    caller zeroes the two buffers once: the padding stays zero."""
    out_h, out_w = dy.shape[1], dy.shape[2]
    for oh in range(out_h):  # the transpose: contiguous writes were measured fastest
        for ow in range(out_w):
            row = dy_t[oh * wq + ow]
            for o in range(dy.shape[0]):
                row[o] = dy[o, oh, ow]
    if dy_wide.shape[0]:
        for o in range(dy.shape[0]):
            for oh in range(out_h):
                target, source = dy_wide[o, front + oh * wq:], dy[o, oh]
                for ow in range(out_w):
                    target[ow] = source[ow]


@njit(fastmath=FASTMATH, nogil=True)
def _weight_grad_sample(grid, row_start, dy_t, out_h, out_w, wq, dweight_t, lanes):
    """``dweight_t[k, o] +=`` the sum over the output positions q (``oh * wq + ow``, ``ow < out_w``) of
    ``grid[row_start[k] + q] * dy_t[q, o]`` for one sample's flattened ``grid``: weight row k (input
    channel, tap) against output channel o. The dropped positions are left out, not multiplied by a
    zero: the grid holds real input values there, and an infinite one would make a NaN."""
    wide_vectors()
    row_values = stack_array(1, ROWS, dy_t.dtype)
    for k0 in range(0, dweight_t.shape[0], ROWS):
        starts = row_start[k0:k0 + ROWS]
        for o0 in range(0, dweight_t.shape[1], len(lanes)):
            acc = stack_array(ROWS, lanes, dy_t.dtype)
            for i in range(ROWS):
                for j in range(len(lanes)):
                    acc[i, j] = dweight_t[k0 + i, o0 + j]
            for oh in range(out_h):
                for q in range(oh * wq, oh * wq + out_w):
                    # Unsigned, like row_start: Numba checks a signed index for wrapping from the end, an
                    # unsigned one it takes as it is, which leaves the 8 loads without their checks.
                    position = np.uint64(q)
                    for i in range(ROWS):
                        row_values[0, i] = grid[starts[i] + position]
                    _multiply_add(acc, row_values[0], dy_t[q, o0:], lanes)
            for i in range(ROWS):
                for j in range(len(lanes)):
                    dweight_t[k0 + i, o0 + j] = acc[i, j]


@njit(fastmath=FASTMATH, nogil=True)
def _input_grad_sample(dy_wide, weight_blocks, phase_taps, phase_offsets, front, phase_pixel, phase_span, dx,
                       lanes):
    """One sample's ``dx`` (C_pad, H * W): each position of each grid phase plane gathers the output
    positions whose taps read it, and lands on its input pixel.

    ``dy_wide[o, front + q]`` is dy at wide position q (zeros around); ``phase_offsets[phase, u]`` the
    offset of the phase's u-th tap (``phase_taps[phase]`` of them) and
    ``weight_blocks[phase, block, o * max_taps + u, i]`` its weight from output channel o to input
    channel ``block * ROWS + i``; ``phase_pixel[phase, r]`` the input pixel at position r, or -1 in the
    padding, and ``phase_span[phase]`` the first and last + 1 positions that have one.
    """
    wide_vectors()
    max_taps = phase_offsets.shape[1]
    for phase in range(phase_pixel.shape[0]):
        for r0 in range(phase_span[phase, 0], phase_span[phase, 1], len(lanes)):
            for block in range(weight_blocks.shape[1]):
                acc = stack_array(ROWS, lanes, dx.dtype)
                acc[:] = 0
                weights = weight_blocks[phase, block]
                for o in range(dy_wide.shape[0]):
                    for u in range(phase_taps[phase]):
                        shift = front - phase_offsets[phase, u] + r0
                        _multiply_add(acc, weights[o * max_taps + u], dy_wide[o, shift:], lanes)
                first = block * ROWS
                for j in range(len(lanes)):
                    pixel = phase_pixel[phase, r0 + j]
                    if pixel >= 0:
                        for i in range(ROWS):
                            dx[first + i, pixel] = acc[i, j]


@njit(fastmath=FASTMATH, nogil=True)
def _input_grad_sample_by_channels(dy_wide, channel_blocks, phase_taps, phase_offsets, front, phase_pixel, phase_box,
                                   wq, dx, lanes):
    """:func:`_input_grad_sample` with the roles turned: the block's rows are ROWS positions of one row of
    a phase plane (``wq`` wide), its lanes input channels (``channel_blocks[phase, block, o * max_taps +
    u, j]``, the weight to input channel ``block * len(lanes) + j``). Only the rectangle of positions
    that have an input pixel is computed: ``phase_box[phase]`` holds its first row, last row + 1, first
    column and last column + 1."""
    wide_vectors()
    max_taps = phase_offsets.shape[1]
    for phase in range(phase_pixel.shape[0]):
        row_first, row_stop, column_first, column_stop = phase_box[phase]
        for block in range(channel_blocks.shape[1]):
            weights, first = channel_blocks[phase, block], block * len(lanes)
            for row in range(row_first, row_stop):
                row_end = row * wq + column_stop
                for r0 in range(row * wq + column_first, row_end, ROWS):
                    acc = stack_array(ROWS, lanes, dx.dtype)
                    acc[:] = 0
                    for o in range(dy_wide.shape[0]):
                        for u in range(phase_taps[phase]):
                            shift = front - phase_offsets[phase, u] + r0
                            _multiply_add(acc, dy_wide[o, shift:], weights[o * max_taps + u], lanes)
                    for i in range(min(ROWS, row_end - r0)):
                        pixel = phase_pixel[phase, r0 + i]
                        for j in range(len(lanes)):
                            dx[first + j, pixel] = acc[i, j]


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _backward_samples(dy, grid_flat, row_start, wq, dweight_t, dy_t, dy_wide, weight_blocks, phase_taps,
                      phase_offsets, phase_pixel, phase_span, phase_box, input_by_channels, dx, weight_lanes,
                      input_lanes, start, stop):
    """Samples [start, stop), one at a time so that its layouts of ``dy`` (one sample's ``dy_t`` and
    ``dy_wide``) stay in the cache: its part of ``dweight_t`` and, when ``dx`` is not empty, its
    input gradient (by channels when ``input_by_channels``); each product in blocks of its own width."""
    front = phase_offsets.max()
    for n in range(start, stop):
        _dy_layouts(dy[n], wq, front, dy_wide, dy_t)
        _weight_grad_sample(grid_flat[n], row_start, dy_t, dy.shape[2], dy.shape[3], wq, dweight_t, weight_lanes)
        if dx.shape[0] and input_by_channels:
            _input_grad_sample_by_channels(dy_wide, weight_blocks, phase_taps, phase_offsets, front, phase_pixel,
                                           phase_box, wq, dx[n], input_lanes)
        elif dx.shape[0]:
            _input_grad_sample(dy_wide, weight_blocks, phase_taps, phase_offsets, front, phase_pixel, phase_span,
                               dx[n], input_lanes)


@njit(cache=True, nogil=True, parallel=True)
def _forward_ranges(x, grid, grid_layout, weight_blocks, bias, y, row_start, wide_pixel, out_w, order, lanes, bounds):
    """:func:`_forward_samples` for each range of samples ``bounds[r]:bounds[r + 1]``, one per thread."""
    for r in prange(bounds.size - 1):
        _forward_samples(x, grid, grid_layout, weight_blocks, bias, y, row_start, wide_pixel, out_w, order, lanes,
                         bounds[r], bounds[r + 1])


@njit(cache=True, nogil=True, parallel=True)
def _backward_ranges(dy, grid_flat, row_start, wq, dweight_parts, dy_t, dy_wide, weight_blocks, phase_taps,
                     phase_offsets, phase_pixel, phase_span, phase_box, input_by_channels, dx, weight_lanes,
                     input_lanes, bounds):
    """:func:`_backward_samples` for each range of samples, one per thread, each with its own part of
    the weight gradient and its own layouts of ``dy``."""
    for r in prange(bounds.size - 1):
        _backward_samples(dy, grid_flat, row_start, wq, dweight_parts[r], dy_t[r], dy_wide[r], weight_blocks,
                          phase_taps, phase_offsets, phase_pixel, phase_span, phase_box, input_by_channels, dx,
                          weight_lanes, input_lanes, bounds[r], bounds[r + 1])


# ------------------------------------------------------------ the forward and backward conv.py calls
def _padded_rows(matrix: np.ndarray, rows: int) -> np.ndarray:
    """``matrix`` with zero rows appended up to ``rows`` rows."""
    if matrix.shape[0] == rows:
        return matrix
    return np.concatenate([matrix, np.zeros((rows - matrix.shape[0], *matrix.shape[1:]), matrix.dtype)])


def _row_blocks(matrix: np.ndarray, rows: int = ROWS) -> np.ndarray:
    """(R, K) as (R_pad / rows, K, rows): the values of each block of ``rows`` rows, step by step."""
    matrix = _padded_rows(matrix, padded(matrix.shape[0], rows))
    return np.ascontiguousarray(matrix.reshape(-1, rows, matrix.shape[1]).transpose(0, 2, 1))


def _bounds(ranges: list[tuple[int, int]]) -> np.ndarray:
    """Consecutive ranges of samples as bounds: range r is ``bounds[r]:bounds[r + 1]``."""
    return np.array([start for start, _ in ranges] + [ranges[-1][1]], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _row_start(channels: int, phases: int, plane_size: int, tap_phase: tuple[int, ...],
               tap_offset: tuple[int, ...]) -> np.ndarray:
    """Where the grid run of each weight row (input channel, tap) starts in a sample's flattened grid,
    unsigned (uint64), padded to a multiple of ROWS rows by repeating the last one."""
    channel = np.arange(channels)[:, None]
    starts = ((channel * phases + np.array(tap_phase)) * plane_size + np.array(tap_offset)).reshape(-1)
    return np.concatenate([starts, np.full(padded(starts.size, ROWS) - starts.size, starts[-1])]).astype(np.uint64)


def _plan_row_start(channels: int, plan: GridPlan) -> np.ndarray:
    """:func:`_row_start` for ``channels`` input channels in the grid of ``plan``."""
    return _row_start(channels, plan.stride[0] * plan.stride[1], plan.plane_size, tuple(plan.tap_phase.tolist()),
                      tuple(plan.tap_offset.tolist()))


def forward_order(plan: GridPlan, out_channels: int, by_rows: bool) -> int:
    """How the forward blocks its outputs: ROWS output channels by blocks of wide positions (WIDE) or of
    one output row's positions (BY_ROWS, for short weight rows), or ROWS positions of an output row by
    blocks of output channels (BY_CHANNELS), where those compute the fewest padded and dropped values."""
    if by_rows:
        return BY_ROWS
    out_h, out_w = plan.out_size
    positions = out_h * plan.wq
    wide_values = padded(positions, lanes_for(positions)) * padded(out_channels, ROWS)
    by_channels_values = out_h * padded(out_w, ROWS) * padded(out_channels, lanes_for(out_channels))
    return BY_CHANNELS if by_channels_values < BY_CHANNELS_SHARE * wide_values else WIDE


def forward(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, grid: np.ndarray, plan: GridPlan,
            ranges: list[tuple[int, int]], by_rows: bool = False) -> np.ndarray:
    """The convolution of float32 NCHW ``x`` by ``weight`` (O, C, kh, kw) plus ``bias``, each range of
    samples on its own thread (:func:`_forward_ranges`); fills ``grid`` (the backward's saved input) on
    the way. ``by_rows``: blocks of output rows (:func:`_forward_sample_by_rows`), for short weight rows;
    otherwise the order of :func:`forward_order`."""
    out_channels = weight.shape[0]
    order = forward_order(plan, out_channels, by_rows)
    out_w = plan.out_size[1]
    if order == BY_CHANNELS:
        lanes = lanes_for(out_channels)
        blocks = _row_blocks(weight.reshape(out_channels, -1), lanes)
    else:
        lanes = lanes_for(out_w if order == BY_ROWS else plan.out_size[0] * plan.wq)
        blocks = _row_blocks(weight.reshape(out_channels, -1))
    rows = blocks.shape[0] * blocks.shape[2]
    y = np.empty((x.shape[0], rows, plan.per_sample), dtype=x.dtype)

    layout = (plan.pad_top, plan.pad_left, *plan.stride, plan.wq)
    wide_pixel = plan.wide_pixel[:padded(plan.out_size[0] * plan.wq, lanes)]
    arguments = (x, grid, layout, blocks, _padded_rows(bias, rows), y, _plan_row_start(x.shape[1], plan), wide_pixel,
                 out_w, order, width(lanes))
    if len(ranges) == 1:
        _forward_samples(*arguments, *ranges[0])
    elif ranges:
        _forward_ranges(*arguments, _bounds(ranges))
    return np.ascontiguousarray(y[:, :out_channels]).reshape(x.shape[0], out_channels, *plan.out_size)


class _BackwardPlan(NamedTuple):
    """What the backward's kernels need beyond the grid plan, for one input size and channel count."""
    phase_taps: np.ndarray  # (phases,) the number of taps that read each grid phase
    phase_tap: np.ndarray  # (phases, max_taps) those taps (padded with tap 0)
    phase_offsets: np.ndarray  # (phases, max_taps) their offsets (padded with 0)
    phase_pixel: np.ndarray  # (phases, positions) the input pixel at each phase position, -1 in the padding
    phase_span: np.ndarray  # (phases, 2) the first and last + 1 positions that have an input pixel
    phase_box: np.ndarray  # (phases, 4) the rows and columns (first, last + 1 of each) that have one
    row_start: np.ndarray  # (C * taps padded to ROWS,) where each weight row's grid run starts (uint64)
    input_by_channels: bool  # the input gradient's blocks by channels (input_gradient_by_channels)
    input_lanes: int  # its block width: for the longest phase span, or for the input channels


@functools.lru_cache(maxsize=64)
def _backward_plan(channels: int, h: int, w: int, pad_top: int, pad_left: int, stride: tuple[int, int], wq: int,
                   plane_size: int, tap_phase: tuple[int, ...], tap_offset: tuple[int, ...]) -> _BackwardPlan:
    """The :class:`_BackwardPlan` of a ``channels x h x w`` input in a grid (the GridPlan's fields)."""
    sh, sw = stride
    tap_phase_array, tap_offset_array = np.array(tap_phase), np.array(tap_offset)
    taps_of = [np.flatnonzero(tap_phase_array == phase) for phase in range(sh * sw)]
    max_taps = max(1, max(taps.size for taps in taps_of))
    phase_tap = np.zeros((sh * sw, max_taps), dtype=np.int64)
    phase_offsets = np.zeros((sh * sw, max_taps), dtype=np.int64)
    positions = np.arange(padded(plane_size, LANES) + LANES)
    phase_pixel = np.full((sh * sw, positions.size), -1, dtype=np.int64)
    phase_span = np.zeros((sh * sw, 2), dtype=np.int64)
    phase_box = np.zeros((sh * sw, 4), dtype=np.int64)
    for phase, taps in enumerate(taps_of):
        phase_tap[phase, :taps.size] = taps
        phase_offsets[phase, :taps.size] = tap_offset_array[taps]
        row = positions // wq * sh + phase // sw - pad_top
        col = positions % wq * sw + phase % sw - pad_left
        inside = (row >= 0) & (row < h) & (col >= 0) & (col < w) & (positions < plane_size)
        phase_pixel[phase, inside] = row[inside] * w + col[inside]
        if inside.any():
            phase_span[phase] = np.flatnonzero(inside)[[0, -1]] + (0, 1)
            rows, columns = positions[inside] // wq, positions[inside] % wq
            phase_box[phase] = rows.min(), rows.max() + 1, columns.min(), columns.max() + 1
    counts = np.array([taps.size for taps in taps_of], dtype=np.int64)
    by_channels = input_gradient_by_channels(channels, phase_span, phase_box)
    input_lanes = lanes_for(channels if by_channels else int((phase_span[:, 1] - phase_span[:, 0]).max()))
    return _BackwardPlan(counts, phase_tap, phase_offsets, phase_pixel, phase_span, phase_box,
                         _row_start(channels, sh * sw, plane_size, tap_phase, tap_offset), by_channels, input_lanes)


def input_gradient_by_channels(channels: int, phase_span: np.ndarray, phase_box: np.ndarray) -> bool:
    """Whether the input gradient takes its blocks by channels: where they compute under
    BY_CHANNELS_SHARE of the values that blocks of each phase span's positions would (as
    :func:`forward_order`)."""
    spans = phase_span[:, 1] - phase_span[:, 0]
    span_lanes = lanes_for(int(spans.max()))
    span_values = sum(padded(int(span), span_lanes) for span in spans) * padded(channels, ROWS)
    rows, columns = phase_box[:, 1] - phase_box[:, 0], phase_box[:, 3] - phase_box[:, 2]
    box_positions = sum(int(r) * padded(int(c), ROWS) for r, c in zip(rows, columns))
    return box_positions * padded(channels, lanes_for(channels)) < BY_CHANNELS_SHARE * span_values


@njit(cache=True, nogil=True)
def _pack_input_grad_weights(weight, phase_taps, phase_tap, blocks):
    """``blocks[phase, block, o * max_taps + u, i]`` = the weight from output channel o to input channel
    ``block * size + i`` of the phase's u-th tap (``size``: the blocks' last dimension); zero for padded
    channels and the taps a phase lacks."""
    out_channels, channels = weight.shape[0], weight.shape[1]
    max_taps, size = phase_tap.shape[1], blocks.shape[3]
    blocks[:] = 0
    for phase in range(phase_tap.shape[0]):
        for c in range(channels):
            for o in range(out_channels):
                for u in range(phase_taps[phase]):
                    blocks[phase, c // size, o * max_taps + u, c % size] = weight[o, c, phase_tap[phase, u]]


def _input_grad_weights(weight: np.ndarray, plan: _BackwardPlan) -> np.ndarray:
    """The input gradient's weights (phases, C_pad / size, O * max_taps, size) for ``weight`` (O, C, kh,
    kw), packed by :func:`_pack_input_grad_weights`: blocks of ROWS input channels, or of the block
    width when the input gradient runs by channels."""
    out_channels, channels = weight.shape[:2]
    phases, max_taps = plan.phase_tap.shape
    size = plan.input_lanes if plan.input_by_channels else ROWS
    blocks = np.empty((phases, padded(channels, size) // size, out_channels * max_taps, size), dtype=weight.dtype)
    _pack_input_grad_weights(weight.reshape(out_channels, channels, -1), plan.phase_taps, plan.phase_tap, blocks)
    return blocks


def backward(dy: np.ndarray, grid: np.ndarray, x_shape: tuple[int, ...], weight: np.ndarray, plan: GridPlan,
             ranges: list[tuple[int, int]], needs_input_grad: bool) -> tuple[np.ndarray | None, np.ndarray]:
    """``(dx, dweight)`` of :func:`forward` for the upstream gradient ``dy``; ``dx`` is None unless
    ``needs_input_grad``. Each range of samples runs on its own thread (:func:`_backward_ranges`); their
    ``dweight`` parts are added in a fixed order."""
    n, channels = x_shape[:2]
    out_channels = weight.shape[0]
    backward_plan = _backward_plan(channels, *x_shape[2:], plan.pad_top, plan.pad_left, plan.stride, plan.wq,
                                   plan.plane_size, tuple(plan.tap_phase.tolist()), tuple(plan.tap_offset.tolist()))
    phase_pixel, phase_span, row_start = backward_plan.phase_pixel, backward_plan.phase_span, backward_plan.row_start
    if needs_input_grad:
        blocks = _input_grad_weights(weight, backward_plan)
    else:  # only the weight gradient: no input-gradient blocks, no dy_wide
        blocks = np.empty((0, 0, 0, ROWS), dy.dtype)
    phase_taps, phase_offsets = backward_plan.phase_taps, backward_plan.phase_offsets
    dy_wide_shape = (out_channels if needs_input_grad else 0, int(plan.tap_offset.max()) + phase_pixel.shape[1])
    dx = np.empty((n if needs_input_grad else 0, blocks.shape[1] * blocks.shape[3], x_shape[2] * x_shape[3]),
                  dtype=dy.dtype)
    grid_flat = grid.reshape(n, math.prod(grid.shape[1:]))

    weight_lanes = lanes_for(out_channels)
    dweight_shape = (row_start.size, padded(out_channels, weight_lanes))

    # Each range of samples has its own part of dweight (transposed) and its own layouts of dy.
    count = max(len(ranges), 1)
    parts = np.zeros((count, *dweight_shape), dtype=dy.dtype)
    dy_t = np.zeros((count, plan.wide_pixel.size, dweight_shape[1]), dtype=dy.dtype)
    dy_wide = np.zeros((count, *dy_wide_shape), dtype=dy.dtype)
    head = (dy, grid_flat, row_start, plan.wq)
    tail = (blocks, phase_taps, phase_offsets, phase_pixel, phase_span, backward_plan.phase_box,
            backward_plan.input_by_channels, dx, width(weight_lanes), width(backward_plan.input_lanes))
    if len(ranges) == 1:
        _backward_samples(*head, parts[0], dy_t[0], dy_wide[0], *tail, *ranges[0])
    elif ranges:
        _backward_ranges(*head, parts, dy_t, dy_wide, *tail, _bounds(ranges))
    dweight_t = parts[0]
    for part in parts[1:]:  # in a fixed order: the result depends on the thread count only
        dweight_t += part
    dweight = dweight_t[:channels * plan.tap_phase.size, :out_channels].T.reshape(weight.shape)
    if not needs_input_grad:
        return None, np.ascontiguousarray(dweight)
    return np.ascontiguousarray(dx[:, :channels]).reshape(x_shape), np.ascontiguousarray(dweight)
