"""Matrix products on numpy arrays: numpy's ``matmul``, with large products shared out among Numba's
threads, each thread running OpenBLAS's GEMM at one thread on its part.

A training step alternates matrix products with parallel Numba kernels (norms, softmax, GELU). Left to
OpenBLAS, the products run on OpenBLAS's own thread pool and the kernels on Numba's: two pools on the
same cores, each pool's idle threads waiting beside the other's work, and each pool's sleeping threads
woken for every call (on a virtual machine a wake-up can cost more than a small product takes). Here
the products run on Numba's pool too, so one pool serves the whole step: a 2-D product is cut into
bands of rows, a batched one (attention's ``q @ k^T`` over batch x heads) into runs of matrices, and
each thread calls OpenBLAS's single-threaded GEMM on its share (measured: docs/benchmarks.md).

- OpenBLAS is set to one thread while a product runs and reset afterwards (its thread count is
  process-wide: BLAS calls from other Python threads meanwhile also run on one thread, and products
  from several Python threads run one at a time).
- Each part is one GEMM of at least :data:`PART_MIN_MULTIPLY_ADDS`: smaller products go to numpy
  whole, as they would run on one thread inside OpenBLAS anyway.
- The results are OpenBLAS's, as numpy's are, but OpenBLAS blocks a product by its shape, so an element
  of a band can round differently than in the whole product: they match numpy's to rounding and
  depend on the thread count (never on timing).
- numpy's path is kept for everything else: other dtypes than float32/float64, mixed dtypes, 1-D
  operands, strides BLAS cannot take, empty products, one thread, and a BLAS that is not OpenBLAS
  with 64-bit integers on its own threads (numpy's wheels). numpy also raises the errors.
"""
from __future__ import annotations

import ctypes
import math
import os
import threading

import llvmlite.binding as llvm
import numba
import numpy as np
from numba import njit, prange, types

from . import blas_pool

# Below this many multiply-adds a part is not worth a thread: OpenBLAS itself runs such a product on
# one thread (its SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD).
PART_MIN_MULTIPLY_ADDS = 1 << 18
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE = 101, 111, 112  # CBLAS's enum values

# The GEMMs under names of tinynorm's own, bound to numpy's OpenBLAS when it is found (_bind): the
# compiled driver calls them by name, so it can be cached across processes.
_SGEMM, _DGEMM = "tinynorm_cblas_sgemm64", "tinynorm_cblas_dgemm64"
_i32, _i64 = types.int32, types.int64


def _gemm_signature(scalar: types.Type) -> types.Type:
    """cblas_?gemm with 64-bit integers; the matrices' addresses as integers (the same registers)."""
    return types.void(_i32, _i32, _i32, _i64, _i64, _i64, scalar, _i64, _i64, _i64, _i64, scalar, _i64, _i64)


_sgemm = types.ExternalFunction(_SGEMM, _gemm_signature(types.float32))
_dgemm = types.ExternalFunction(_DGEMM, _gemm_signature(types.float64))


@njit(cache=True, parallel=True, nogil=True)
def _parts_parallel(double, trans_a, trans_b, m, n, k, a, lda, a_row_step, a_offsets, b, ldb, b_offsets,
                    c, c_offsets, bands, parts):
    """Every matrix of the batch times ``bands`` bands of its rows, shared out in ``parts`` runs.

    ``a``, ``b``, ``c`` are addresses, the ``*_offsets`` each matrix's offset from them in bytes;
    band ``j`` holds rows ``[m * j // bands, m * (j + 1) // bands)``, which start ``a_row_step`` bytes
    a row apart in ``a`` (one row: ``lda`` elements; one column of a transposed ``a``: one element).
    """
    units = c_offsets.size * bands
    itemsize = 8 if double else 4
    for part in prange(parts):
        for unit in range(units * part // parts, units * (part + 1) // parts):
            matrix, band = unit // bands, unit % bands
            first, stop = m * band // bands, m * (band + 1) // bands
            a_at = a + a_offsets[matrix] + first * a_row_step
            b_at = b + b_offsets[matrix]
            c_at = c + c_offsets[matrix] + first * n * itemsize
            if double:
                _dgemm(ROW_MAJOR, trans_a, trans_b, stop - first, n, k, 1.0, a_at, lda, b_at, ldb, 0.0, c_at, n)
            else:
                _sgemm(ROW_MAJOR, trans_a, trans_b, stop - first, n, k, np.float32(1.0), a_at, lda, b_at, ldb,
                       np.float32(0.0), c_at, n)


def _find_openblas() -> tuple | None:
    """numpy's OpenBLAS functions (sgemm, dgemm, get and set the thread count), or None: another BLAS,
    OpenBLAS on OpenMP threads, or a build with 32-bit integers."""
    controller = blas_pool.blas()
    if not controller or controller.internal_api != "openblas" or controller.threading_layer != "pthreads":
        return None
    library = controller.dynlib
    for prefix in ("scipy_", ""):
        names = [f"{prefix}{name}64_" for name in ("cblas_sgemm", "cblas_dgemm", "openblas_get_num_threads",
                                                   "openblas_set_num_threads")]
        if all(hasattr(library, name) for name in names):
            sgemm, dgemm, get_threads, set_threads = (getattr(library, name) for name in names)
            get_threads.argtypes, get_threads.restype = (), ctypes.c_int
            set_threads.argtypes, set_threads.restype = (ctypes.c_int,), None
            return sgemm, dgemm, get_threads, set_threads
    return None


_state: dict = {}
_lock = threading.Lock()  # one product at a time sets OpenBLAS's process-wide thread count and resets it


def _forget_lock_in_child() -> None:
    """A forked child inherits the lock, maybe held by a thread it does not have: start afresh."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_lock_in_child)


def _openblas() -> tuple | None:
    """(get_threads, set_threads) of numpy's OpenBLAS, its GEMMs bound to the driver's names; None
    when there is no such OpenBLAS. Looked up once."""
    if "functions" not in _state:
        found = _find_openblas()
        if found is not None:
            sgemm, dgemm, get_threads, set_threads = found
            llvm.add_symbol(_SGEMM, ctypes.cast(sgemm, ctypes.c_void_p).value)
            llvm.add_symbol(_DGEMM, ctypes.cast(dgemm, ctypes.c_void_p).value)
            found = get_threads, set_threads
        _state["functions"] = found
    return _state["functions"]


def _layout(x: np.ndarray) -> tuple[int, int, int] | None:
    """How BLAS reads the last two dims of ``x``: (CBLAS transpose flag, leading dimension, bytes from
    one row to the next), or None when no flag fits the strides."""
    rows, columns = x.shape[-2:]
    row_stride, column_stride = x.strides[-2:]
    itemsize = x.itemsize
    if not x.flags.aligned or row_stride % itemsize or column_stride % itemsize:
        return None
    if column_stride == itemsize and row_stride >= itemsize * max(1, columns):
        return NO_TRANSPOSE, row_stride // itemsize, row_stride
    if row_stride == itemsize and column_stride >= itemsize * max(1, rows):
        return TRANSPOSE, column_stride // itemsize, itemsize
    return None


_ONE_MATRIX = np.zeros(1, np.int64)  # the offsets of an unbatched matrix; writeable, as every offsets array
# the driver gets, so that it is compiled once (the driver only reads them)


def _offsets(x: np.ndarray) -> np.ndarray:
    """Each matrix's offset in bytes from ``x``'s first element, its batch dims in C order."""
    batch = x.shape[:-2]
    if not batch:
        return _ONE_MATRIX
    index = np.indices(batch, dtype=np.int64).reshape(len(batch), -1)
    return np.asarray(x.strides[:-2], np.int64) @ index


def _split(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """``a @ b`` on Numba's threads, or None when numpy's path should take it (module docstring)."""
    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.dtype not in _BLAS_DTYPES:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    threads = numba.get_num_threads()
    if b.shape[-2] != k or threads < 2 or not m * n * k:
        return None
    if a.ndim == b.ndim == 2:  # Linear's products: no batch to broadcast (a few µs a call saved)
        batch = ()
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return None
        a, b = np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n))
    matrices = math.prod(batch)
    bands = min(m, -(-threads // matrices), max(1, m * n * k // PART_MIN_MULTIPLY_ADDS))
    parts = min(threads, matrices * bands)
    if matrices * m * n * k < 2 * PART_MIN_MULTIPLY_ADDS or parts < 2:
        return None
    layout_a, layout_b = _layout(a), _layout(b)
    blas = _openblas() if layout_a and layout_b else None
    if blas is None:
        return None
    out = np.empty(batch + (m, n), a.dtype)
    offsets_a, offsets_b, offsets_out = _offsets(a), _offsets(b), _offsets(out)
    get_threads, set_threads = blas
    with _lock:
        previous = get_threads()
        set_threads(1)
        try:
            _parts_parallel(a.dtype == np.float64, layout_a[0], layout_b[0], m, n, k, a.ctypes.data, layout_a[1],
                            layout_a[2], offsets_a, b.ctypes.data, layout_b[1], offsets_b, out.ctypes.data,
                            offsets_out, bands, parts)
        finally:
            set_threads(previous)
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)``, a large product shared out among Numba's threads (module docstring)."""
    out = _split(a, b)
    return np.matmul(a, b) if out is None else out
