"""The largest entry of a row of floats in a loop LLVM vectorizes, for the kernels that shift rows by
their maximum (softmax, cross-entropy).

A running maximum is a reduction LLVM may not reorder without assuming no NaN, so it stays a scalar
loop; LANES running maxima side by side, merged at the end, vectorize (measured: docs/benchmarks.md).
"""
from numba import njit

from ._config import FASTMATH
from ._stack import stack_array
from ._vector_width import wide_vectors

LANES = 16  # running maxima side by side: one AVX-512 register of float32


@njit(fastmath=FASTMATH, nogil=True)
def finite_max(row, n):
    """The largest of ``row[:n]`` (n >= 1) if none is NaN: LANES running maxima, then the largest of them."""
    wide_vectors()
    lanes = stack_array(1, LANES, row.dtype)
    lanes[0, :] = row[0]
    full = n - n % LANES
    for j0 in range(0, full, LANES):
        for lane in range(LANES):
            value = row[j0 + lane]
            lanes[0, lane] = value if value > lanes[0, lane] else lanes[0, lane]
    largest = row[0]
    for lane in range(LANES):
        largest = lanes[0, lane] if lanes[0, lane] > largest else largest
    for j in range(full, n):
        largest = row[j] if row[j] > largest else largest
    return largest
