"""Sums across the threads of a warp or a block, and the fixed-order sum of per-block partials.

On the GPU a warp adds its 32 values with a butterfly of ``shfl_xor_sync`` exchanges: five steps, no
shared memory, no barrier, every lane ends with the same total, and the pairs are always added in
the same order (deterministic).

The CUDA simulator has no shuffle instructions. When ``numba.config.ENABLE_CUDASIM`` is set at import,
``warp_sum`` is replaced by a shared-memory stand-in: each thread writes its value, the block
synchronizes, and each thread replays the same butterfly on a copy of its warp's 32 values (plain
Python, which is what the simulator runs), so it returns exactly the GPU's float32 result. The
stand-in synchronizes the whole block, so in the simulator *every thread of the block* must call a
reduction the same number of times: the kernels keep their loops block-uniform (threads without work
take part with zeros), which costs nothing on the GPU. The shuffle version is checked by compiling
it to PTX (tests/cuda/test_cuda_ptx.py) and, on a GPU, by benchmarks/gpu_check.py.
"""
from __future__ import annotations

import numpy as np
from ...backends.cuda.runtime.compiler import config, cuda, float32

from ...backends.cuda.runtime.launch import jit, launch
from ._shared import empty

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF
MAX_BLOCK_THREADS = 1024


@cuda.jit(device=True)
def lane_index():
    """This thread's lane in its warp, 0 to 31.

    A bit mask rather than ``threadIdx.x % 32``: Python's ``%`` on a signed integer compiles to extra
    selects, after which the compiler cannot tell that ``lane + 32 * k`` is non-negative and adds
    negative-index wrap-around (a 64-bit select) to every array access. With the mask, the narrow
    LayerNorm forward at 16 values per lane needs 56 registers instead of 231 (ptxas, sm_90).
    """
    return cuda.threadIdx.x & (WARP_SIZE - 1)


if config.ENABLE_CUDASIM:
    _LANES = np.arange(WARP_SIZE)

    @cuda.jit(device=True)
    def warp_sum(value):
        """Simulator stand-in: the GPU butterfly below, replayed on the warp's values in shared memory."""
        slots = cuda.shared.array(MAX_BLOCK_THREADS, float32)
        cuda.syncthreads()  # everyone has read the previous call's values
        slots[cuda.threadIdx.x] = value
        cuda.syncthreads()
        first = cuda.threadIdx.x - lane_index()
        lanes = slots[first:first + WARP_SIZE].copy()
        lane_mask = WARP_SIZE // 2
        while lane_mask > 0:
            lanes = lanes + lanes[_LANES ^ lane_mask]  # float32 + float32, as on the GPU
            lane_mask //= 2
        return lanes[lane_index()]
else:
    @cuda.jit(device=True)
    def warp_sum(value):
        """Sum of ``value`` (float32) over the 32 lanes of the warp, returned to every lane.

        Step ``lane_mask`` adds the value of lane ``lane ^ lane_mask``: after 16, 8, 4, 2, 1 every lane
        holds the total, summed in the same order on every run.
        """
        lane_mask = WARP_SIZE // 2
        while lane_mask > 0:
            value += cuda.shfl_xor_sync(FULL_MASK, value, lane_mask)
            lane_mask //= 2
        return value


@cuda.jit(device=True)
def block_sum(value):
    """Sum of ``value`` (float32) over a 1-D block whose size is a multiple of 32, returned to every thread.

    Each warp reduces its own values, lane 0 of each warp leaves the warp's total in shared memory,
    and then every warp reduces those (at most 32) totals itself, in the same order, so every thread
    gets the same total without a third barrier. Every thread of the block must call it.
    """
    warp_totals = cuda.shared.array(WARP_SIZE, float32)
    lane = lane_index()
    value = warp_sum(value)
    cuda.syncthreads()  # every thread has read the totals of the previous call
    if lane == 0:
        warp_totals[cuda.threadIdx.x // WARP_SIZE] = value
    cuda.syncthreads()
    total = warp_totals[lane] if lane < cuda.blockDim.x // WARP_SIZE else float32(0)
    return warp_sum(total)


# Partials are summed by blocks of up to SUM_WARPS warps: lane = column, warp = every n-th partial.
SUM_WARPS = 8


@jit
def sum_partials_kernel(part, out):
    """``out[k, j] = sum_p part[k, p, j]``, always adding the partials in the same order.

    Grid ``(ceil(cols / 32), K)``, ``warps <= SUM_WARPS`` warps per block: each block owns 32 columns
    of one ``k``; warp ``w`` adds partials ``w, w + warps, ...`` and warp 0 adds the warps' results
    in warp order.
    """
    k = cuda.blockIdx.y
    lane = lane_index()
    warp = cuda.threadIdx.x // WARP_SIZE
    warps = cuda.blockDim.x // WARP_SIZE
    column = cuda.blockIdx.x * WARP_SIZE + lane
    columns = part.shape[2]
    total = float32(0)
    if column < columns:
        for p in range(warp, part.shape[1], warps):
            total += part[k, p, column]
    per_warp = cuda.shared.array((SUM_WARPS, WARP_SIZE), float32)
    per_warp[warp, lane] = total
    cuda.syncthreads()
    if warp == 0 and column < columns:
        total = float32(0)
        for w in range(warps):
            total += per_warp[w, lane]
        out[k, column] = total


def sum_partials(part):
    """``(K, P, cols)`` float32 partials -> ``(K, cols)`` float32 sums over ``P`` (deterministic)."""
    count, partials, columns = part.shape
    out = empty((count, columns), dtype=part.dtype)
    if columns:
        grid = ((columns + WARP_SIZE - 1) // WARP_SIZE, count)
        warps = max(1, min(SUM_WARPS, partials))
        launch(sum_partials_kernel, grid, warps * WARP_SIZE, (part, out))
    return out
