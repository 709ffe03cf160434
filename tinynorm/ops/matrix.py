"""Parts of matrices: ``tril`` and ``triu`` (the lower and upper triangles, over the last two dims),
``diag`` (a vector's diagonal matrix, or a matrix's diagonal), ``diagonal`` and ``trace``, and the
positions of a triangle, ``tril_indices``/``triu_indices``.

A triangle keeps the elements on one side of a diagonal and zeroes the rest; its gradient is the
gradient masked the same way. ``diag`` is indexing: a matrix's diagonal is read with index arrays
(the gradient goes back to those positions), a vector is written into a matrix of zeros.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor, tensor
from . import reductions
from .dims import normalize_dim
from .inplace import IndexPut
from .rearrange import movedim
from .shape import getitem


def _triangle(xp: Any, shape: tuple, diagonal: int, lower: bool) -> Any:
    """A bool ``(rows, cols)`` array: True where ``col - row <= diagonal`` (lower) or ``>= diagonal``."""
    rows, cols = shape[-2:]
    offset = xp.arange(cols).reshape(1, cols) - xp.arange(rows).reshape(rows, 1)
    return offset <= diagonal if lower else offset >= diagonal


class Triangle(Function):
    backward_name = "TrilBackward0"
    lower = True

    @classmethod
    def forward(cls, ctx: Context, x: Any, diagonal: int) -> Any:
        ctx.keep = _triangle(ctx.xp, x.shape, diagonal, cls.lower)
        return ctx.xp.where(ctx.keep, x, x.dtype.type(0))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.where(ctx.keep, grad, grad.dtype.type(0))


class UpperTriangle(Triangle):
    backward_name = "TriuBackward0"
    lower = False


def _matrices(input: Tensor, op: str) -> None:  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002  (PyTorch's argument name)
    """The lower triangle of each matrix (the last two dims): elements with ``col - row <= diagonal``."""
    _matrices(input, "tril")
    return Triangle.apply(input, int(diagonal))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The upper triangle of each matrix: elements with ``col - row >= diagonal``."""
    _matrices(input, "triu")
    return UpperTriangle.apply(input, int(diagonal))


def _diagonal_positions(rows: int, cols: int, diagonal: int) -> tuple[np.ndarray, np.ndarray]:
    """The (row, col) positions of diagonal ``diagonal`` of a ``rows x cols`` matrix (above the main one
    when positive)."""
    start_row, start_col = max(-diagonal, 0), max(diagonal, 0)
    length = max(0, min(rows - start_row, cols - start_col))
    return np.arange(start_row, start_row + length), np.arange(start_col, start_col + length)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """A 1-D tensor's square matrix with it on diagonal ``diagonal``, or a 2-D tensor's diagonal ``diagonal``."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if input.ndim == 2:
        rows, cols = _diagonal_positions(*input.array.shape, diagonal)
        return getitem(input, (tensor(rows, device=input.device), tensor(cols, device=input.device)))
    size = input.array.shape[0] + abs(diagonal)
    rows, cols = _diagonal_positions(size, size, diagonal)
    zeros = Tensor._from_array(input._backend.zeros((size, size), dtype=input.dtype), input.device)
    index = (tensor(rows, device=input.device).array, tensor(cols, device=input.device).array)
    return IndexPut.apply(zeros, input, index)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The diagonal ``offset`` of the matrices spanned by ``dim1`` and ``dim2``: those dims removed and
    the diagonal appended as the last dim (a copy, read with index arrays: see docs/differences.md)."""
    first, second = normalize_dim(dim1, input.ndim, "diagonal"), normalize_dim(dim2, input.ndim, "diagonal")
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    matrices = movedim(input, (first, second), (-2, -1))
    rows, cols = _diagonal_positions(*matrices.array.shape[-2:], offset)
    return getitem(matrices, (Ellipsis, tensor(rows, device=input.device), tensor(cols, device=input.device)))


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of a matrix's main diagonal (integers sum to int64, as in PyTorch)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return reductions.sum(diagonal(input))


def _triangle_indices(row: int, col: int, offset: int, lower: bool, dtype: Any, device: Any) -> Tensor:
    for name, value in (("row", row), ("col", col)):
        if value < 0:
            raise RuntimeError(f"{name} must be non-negative, got {value}")
    rows, cols = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return tensor(np.stack([rows, cols]), dtype=dtypes.int64 if dtype is None else dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, N)`` row and column indices of the lower triangle of a ``row x col`` matrix, row by row."""
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, N)`` row and column indices of the upper triangle of a ``row x col`` matrix, row by row."""
    return _triangle_indices(row, col, offset, False, dtype, device)
