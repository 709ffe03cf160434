"""More products of tensors: ``cross`` (of 3-vectors along a dim), ``tensordot`` (contraction over
chosen dims) and ``kron`` (the Kronecker product).

Each is a composition of differentiable ops, so its gradient comes from theirs: ``cross`` is products
of the components, ``tensordot`` is one matrix product between permuted and flattened operands, and
``kron`` is a broadcast product of the operands with their dims interleaved.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..tensor import Tensor
from . import arithmetic, linalg
from .dims import normalize_dim
from .rearrange import broadcast_to
from .shape import permute, reshape, stack, unbind


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """The cross product of the 3-vectors along ``dim`` (broadcast, with as many dims); without ``dim``, along the
    first dim of size 3, as PyTorch does (with its warning)."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = np.broadcast_shapes(input.array.shape, other.array.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.", UserWarning, stacklevel=2)
        dim = next((k for k, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input: {list(shape)}")
    d = normalize_dim(dim, len(shape), "linalg.cross")
    if input.array.shape[d] != 3 or other.array.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.array.shape[d]} and "
                           f"{other.array.shape[d]}")
    (a0, a1, a2), (b0, b1, b2) = unbind(broadcast_to(input, shape), d), unbind(broadcast_to(other, shape), d)

    def minor(p: Tensor, q: Tensor, r: Tensor, s: Tensor) -> Tensor:
        return arithmetic.sub(arithmetic.mul(p, q), arithmetic.mul(r, s))

    return stack([minor(a1, b2, a2, b1), minor(a2, b0, a0, b2), minor(a0, b1, a1, b0)], d)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """``a`` and ``b`` contracted over ``dims``: a number ``n`` (the last ``n`` dims of ``a`` with the
    first ``n`` of ``b``) or two lists of dims; the free dims of ``a`` then those of ``b`` remain."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        mine, theirs = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        mine, theirs = ([d] if isinstance(d, int) else list(d) for d in dims)
    mine = [normalize_dim(d, a.ndim, "tensordot") for d in mine]
    theirs = [normalize_dim(d, b.ndim, "tensordot") for d in theirs]
    if len(mine) != len(theirs):
        raise RuntimeError("both dimension lists should have same length")
    for p, q in zip(mine, theirs):
        if a.array.shape[p] != b.array.shape[q]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.array.shape[p]} in dim "
                               f"{p} and second has size {b.array.shape[q]} in dim {q}")
    free_a = [d for d in range(a.ndim) if d not in mine]
    free_b = [d for d in range(b.ndim) if d not in theirs]
    size = int(np.prod([a.array.shape[d] for d in mine]))
    left = reshape(permute(a, free_a + mine), (-1, size))
    right = reshape(permute(b, theirs + free_b), (size, -1))
    shape = tuple(a.array.shape[d] for d in free_a) + tuple(b.array.shape[d] for d in free_b)
    return reshape(linalg.matmul(left, right), shape)


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The Kronecker product: every element of ``input`` times the whole of ``other``, laid out blockwise
    (the fewer dims of the two are padded with leading ones)."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.array.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.array.shape)
    a = reshape(input, tuple(n for size in a_shape for n in (size, 1)))
    b = reshape(other, tuple(n for size in b_shape for n in (1, size)))
    return reshape(arithmetic.mul(a, b), tuple(p * q for p, q in zip(a_shape, b_shape)))
