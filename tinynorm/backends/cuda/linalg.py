"""``matmul`` for :class:`CudaArray` with numpy's rules, on the strided GEMM of
:mod:`tinynorm.kernels.cuda.matmul`.

numpy's rules: a 1-D first operand is a row ``(1, K)`` and a 1-D second operand a column ``(K, 1)``,
that dim is dropped from the result; the dims before the last two are batch dims, broadcast against
each other; the result has ``np.result_type`` of the operands. The kernel reads each operand through
its strides, so transposed views (``weight.T``) and broadcast batches (stride 0) are not copied.
When ``B`` is one matrix shared by every batch and the batch and row dims of ``A`` lie at one stride
from each other, ``(..., M, K) @ (K, N)`` runs as a single ``(B*M, K) @ (K, N)`` product.
"""
from __future__ import annotations

import math
from itertools import pairwise

import numpy as np

from ...kernels.cuda.matmul import accumulator_dtype, gemm
from .array import CudaArray, check_array
from .elementwise import result_type

__all__ = ["linear", "matmul"]

Shape = tuple[int, ...]


def _as_matrix(array: CudaArray, vector: str) -> CudaArray:
    """``array`` itself, or a 1-D one as a ``(1, K)`` row (``vector="row"``) or ``(K, 1)`` column view."""
    if array.ndim != 1:
        return array
    (n,), (stride,) = array.shape, array.strides
    if vector == "row":
        return CudaArray(array.storage, (1, n), (0, stride), array.offset)
    return CudaArray(array.storage, (n, 1), (stride, 0), array.offset)


def _broadcast_strides(array: CudaArray, batch_shape: Shape) -> Shape:
    """``array``'s strides for the dims ``(*batch_shape, rows, cols)``: 0 for a batch dim it lacks or
    has as 1 (it is broadcast there)."""
    missing = len(batch_shape) - (array.ndim - 2)
    strides = (0,) * missing + array.strides
    shape = (1,) * missing + array.shape
    return tuple(0 if n == 1 else s for n, s in zip(shape[:-2], strides[:-2])) + strides[-2:]


def _merged_stride(shape: Shape, strides: Shape) -> int | None:
    """The stride at which the elements of these dims lie in C order (so that they can be read as one
    dim), or None when they do not."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    for (_, outer), (n, inner) in pairwise(dims):
        if outer != inner * n:
            return None
    return dims[-1][1] if dims else 0


def _broadcast_batch(a: Shape, b: Shape) -> Shape | None:
    """The broadcast of two batch shapes, or None when they do not broadcast. The usual cases (equal,
    or a single matrix on one side) skip ``np.broadcast_shapes``, which costs a microsecond a call."""
    if a == b or not b:
        return a
    if not a:
        return b
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def _readable(array: CudaArray) -> CudaArray:
    """``array``, or a contiguous copy when it has a negative stride (the kernel reads forwards from
    the view's offset)."""
    return array.contiguous() if any(s < 0 for s in array.strides) else array


def linear(x: CudaArray, weight: CudaArray, bias: CudaArray | None = None) -> CudaArray:
    """``x @ weight.T + bias`` (PyTorch's ``F.linear``): the GEMM adds the bias as it writes each output,
    one launch instead of two, when the bias is ``(out_features,)`` of the product's dtype (else the sum
    is a separate elementwise add, with numpy's dtype promotion)."""
    if bias is None:
        return matmul(x, weight.T)
    product_dtype = result_type(x, weight)
    if not isinstance(bias, CudaArray) or bias.shape != weight.shape[:1] or bias.dtype != product_dtype:
        return matmul(x, weight.T) + bias
    return matmul(x, weight.T, bias)


def matmul(a: CudaArray, b: CudaArray, bias: CudaArray | None = None) -> CudaArray:
    """``a @ b`` with numpy's semantics (see the module docstring); a ``ValueError`` when the inner
    dims differ or the batch dims do not broadcast. ``bias`` (used by :func:`linear`): a C-contiguous
    ``(N,)`` array of the result's dtype added to every row of the product, in the kernel."""
    for name, array in (("a", a), ("b", b)):
        if check_array(f"matmul: {name}", array).ndim == 0:
            raise ValueError(f"matmul: {name} must have at least one dimension, got a 0-d array")
    dtype = result_type(a, b)
    accumulator_dtype(dtype)  # a TypeError for unsupported dtypes
    a2 = _readable(_as_matrix(a, "row"))
    b2 = _readable(_as_matrix(b, "column"))
    rows, inner = a2.shape[-2:]
    inner_b, cols = b2.shape[-2:]
    if inner != inner_b:
        raise ValueError(f"matmul: a {a.shape} has {inner} columns but b {b.shape} has {inner_b} rows; "
                         f"they must be equal")
    batch_shape = _broadcast_batch(a2.shape[:-2], b2.shape[:-2])
    if batch_shape is None:
        raise ValueError(f"matmul: the batch dims of a {a.shape} and b {b.shape} do not broadcast")
    out = CudaArray.empty((*batch_shape, rows, cols), dtype)
    if out.size:
        _launch(a2, b2, batch_shape, out, bias)
    # Drop the dims numpy added for 1-D operands; the result stays C-contiguous.
    shape = batch_shape + ((rows,) if a.ndim > 1 else ()) + ((cols,) if b.ndim > 1 else ())
    return CudaArray(out.storage, shape)


def _launch(a: CudaArray, b: CudaArray, batch_shape: Shape, out: CudaArray, bias: CudaArray | None) -> None:
    """Fill the C-contiguous ``out`` ``(*batch_shape, M, N)`` with ``a @ b (+ bias)``, as one ``(B*M, K)``
    product when ``b`` is shared by the whole batch and ``a``'s batch and row dims merge."""
    rows, inner = a.shape[-2:]
    cols = b.shape[-1]
    a_strides = _broadcast_strides(a, batch_shape)
    b_strides = _broadcast_strides(b, batch_shape)
    merged = _merged_stride((*batch_shape, rows), a_strides[:-1])
    if batch_shape and merged is not None and not any(b_strides[:-2]):
        rows *= math.prod(batch_shape)
        batch_shape = (1,)
        a_strides = (0, merged, a_strides[-1])
        b_strides = (0,) + b_strides[-2:]
    elif not batch_shape:
        batch_shape = (1,)
        a_strides, b_strides = (0,) + a_strides, (0,) + b_strides
    products = out.subarray(0, (math.prod(batch_shape), rows, cols))
    # The views are valid by construction (their strides stay inside their storage), so the checked
    # entry, matmul_strided, is skipped.
    gemm(a.flat_storage(), a_strides, b.flat_storage(), b_strides, batch_shape, inner, products,
         None if bias is None else bias.contiguous())
