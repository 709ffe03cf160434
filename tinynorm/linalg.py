"""``tinynorm.linalg``: PyTorch's ``torch.linalg`` norms and cross product.

``vector_norm`` is :func:`tinynorm.norm` with ``ord``; ``matrix_norm`` gives the Frobenius norm and the
norms that are sums of absolute values (``ord`` = 1, -1, inf, -inf: the largest or smallest column or
row sum); the spectral and nuclear norms need a singular value decomposition, which tinynorm does not
have, and raise ``NotImplementedError``. ``norm`` chooses between the two as PyTorch does.
"""
from __future__ import annotations

import math
from typing import Any

from .ops import products, reductions
from .ops import linalg as _linalg
from .ops.dims import normalize_dim
from .ops.elementwise import abs as _abs
from .ops.shape import squeeze
from .tensor import Tensor

def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of the 3-vectors along ``dim`` (the last by default)."""
    return products.cross(input, other, dim=dim)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """The ``ord``-norm of ``x`` as a vector over ``dim`` (all elements by default)."""
    return _linalg.norm(x, ord, dim, keepdim, dtype=dtype)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),  # noqa: A002, N803
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The ``ord`` norm of the matrices over the two dims ``dim``: ``'fro'``, or 1, -1, inf, -inf."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    rows, cols = (normalize_dim(d, A.ndim, "linalg.matrix_norm") for d in dim)
    if ord == "fro":
        return _linalg.norm(A, "fro", (rows, cols), keepdim, dtype=dtype)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm(ord={ord!r}) needs a singular value decomposition, which "
                                  "tinynorm does not have")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, kept = (rows, cols) if abs(ord) == 1 else (cols, rows)  # ord 1: column sums; inf: row sums
    sums = reductions.sum(_abs(A if dtype is None else A.to(dtype)), summed, keepdim=True)
    result = (reductions.amax if ord > 0 else reductions.amin)(sums, kept, keepdim=True)
    return result if keepdim else squeeze(result, (rows, cols))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: A002, N803
         dtype: Any = None) -> Tensor:
    """A vector norm over one dim (or all elements), or a matrix norm over two, as ``torch.linalg.norm``."""
    if isinstance(dim, int) or (dim is None and ord is not None and A.ndim == 1) or (dim is None and ord is None):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.ndim != 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.ndim}D.")
        dim = (-2, -1)
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
