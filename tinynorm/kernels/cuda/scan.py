"""Running sums and products along the rows of a C-contiguous ``(rows, cols)`` device array.

One thread per row walks its columns in order, accumulating in the output's dtype (float16 data in
float32), and writes every partial result: ``out[r, c] = x[r, 0] + ... + x[r, c]`` (or the product).
The order of the additions is fixed, so results are the same on every run; rows are independent, so
the parallelism is across rows (a single long row runs on one thread).
"""
from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from ...backends.cuda.runtime.compiler import cuda, from_dtype
from ...backends.cuda.runtime.launch import jit, launch
from .strided import blocks_for, threads_for


@cache
def scan_kernel(accumulator: np.dtype, multiply: bool) -> Any:
    """The kernel ``(x, out)`` writing each row's running sum (``multiply``: product) of ``x`` into
    ``out``, both ``(rows, cols)``, adding in the ``accumulator`` dtype."""
    accumulate = from_dtype(accumulator)
    start = 1 if multiply else 0

    @jit
    def kernel(x, out):
        rows, cols = x.shape
        for row in range(cuda.grid(1), rows, cuda.gridsize(1)):
            total = accumulate(start)
            for col in range(cols):
                if multiply:
                    total *= accumulate(x[row, col])
                else:
                    total += accumulate(x[row, col])
                out[row, col] = total

    return kernel


def scan_rows(x: Any, out: Any, multiply: bool) -> None:
    """Write the running sums (or products) of the rows of ``x`` into ``out`` (Numba device arrays of
    one shape ``(rows, cols)``)."""
    rows = x.shape[0]
    if x.size == 0:
        return
    accumulator = np.dtype(np.float32) if out.dtype == np.float16 else out.dtype
    launch(scan_kernel(accumulator, multiply), blocks_for(rows), threads_for(rows), (x, out))
