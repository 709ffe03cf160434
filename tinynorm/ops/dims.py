"""Checking ``dim`` arguments, once for every op that takes one (PyTorch's rules and errors).

A dim may count from the end (-1 is the last); a 0-d tensor accepts 0 and -1. Anything else is an
``IndexError``, and a dim named twice in a list is a ``RuntimeError``: nothing is silently wrapped.
"""
from __future__ import annotations

import operator
from typing import Any


def normalize_dim(dim: Any, ndim: int, op: str) -> int:
    """``dim`` as a non-negative dim of a tensor with ``ndim`` dims."""
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__} ({dim!r})") from None
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], "
                         f"but got {dim})")
    return dim % rank


def normalize_dims(dim: Any, ndim: int, op: str, sort: bool = True) -> tuple[int, ...] | None:
    """``dim`` (None, an int or a sequence of ints) as a tuple of non-negative dims (sorted unless
    ``sort=False``), or None for "all dims"."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        dims = tuple(normalize_dim(d, ndim, op) for d in dim)
    else:
        dims = (normalize_dim(dim, ndim, op),)
    if len(set(dims)) != len(dims):
        repeated = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"{op}(): dim {repeated} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if sort else dims
