"""Comparisons (``eq``, ``lt``, ``<``, ...), closeness tests (``isclose``, ``allclose``, ``equal``): boolean
results, outside the graph (they have no gradient).

numpy compares in the operands' common dtype as PyTorch does (a Python number takes the tensor's
dtype), so the backend's comparison of the raw arrays is PyTorch's answer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor


def outside_graph(name: str, *operands: Any) -> Tensor:
    """The backend function ``name`` of the operands (tensors on one device, or numbers) as a new
    tensor without history: for ops that have no gradient."""
    tensors = [t for t in operands if isinstance(t, Tensor)]
    device = tensors[0].device
    if any(t.device != device for t in tensors):
        others = next(t.device for t in tensors if t.device != device)
        raise RuntimeError(f"{name}: expected both tensors on the same device, got {device} and {others}; "
                           f"move one with .to(device) first")
    xp = tensors[0]._backend
    arrays = [t.array if isinstance(t, Tensor) else t for t in operands]
    return Tensor._from_array(xp.as_array(getattr(xp, name)(*arrays)), device)


def compare(name: str, a: Any, b: Any) -> Tensor:
    """Elementwise ``name`` (``'less'``, ``'equal'``, ...) of two tensors or numbers, as a bool tensor."""
    return outside_graph(name, a, b)


def eq(input: Any, other: Any) -> Tensor:  # noqa: A002  (PyTorch's argument names)
    """``input == other`` elementwise."""
    return outside_graph("equal", input, other)


def ne(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input != other`` elementwise."""
    return outside_graph("not_equal", input, other)


def lt(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input < other`` elementwise."""
    return outside_graph("less", input, other)


def le(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input <= other`` elementwise."""
    return outside_graph("less_equal", input, other)


def gt(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input > other`` elementwise."""
    return outside_graph("greater", input, other)


def ge(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input >= other`` elementwise."""
    return outside_graph("greater_equal", input, other)


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """Where ``|input - other| <= atol + rtol * |other|`` (equal infinities are close; NaNs only with
    ``equal_nan``). The two must have the same dtype, as in PyTorch."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"isclose(): input and other must be tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.dtype != other.dtype:
        raise RuntimeError(f"{dtypes.type_name(input.dtype)} did not match {dtypes.type_name(other.dtype)}")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value}")
    close = eq(input, other).array
    xp = input._backend
    a, b = input.array, other.array
    if equal_nan and input.dtype.kind == "f":
        close = close | (xp.isnan(a) & xp.isnan(b))
    if rtol == 0 and atol == 0 or input.dtype.kind == "b":
        return Tensor._from_array(xp.as_array(close), input.device)
    if input.dtype.kind != "f":
        a, b = a.astype(dtypes.get_default_dtype()), b.astype(dtypes.get_default_dtype())
    with np.errstate(invalid="ignore"):  # inf - inf is NaN, not close, without numpy's warning
        error = xp.abs(a - b)
        close = close | (xp.isfinite(error) & (error <= atol + xp.abs(rtol * b)))
    return Tensor._from_array(xp.as_array(close), input.device)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other``'s (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).array.all())


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """Whether the two tensors have the same shape and the same values (NaN equals nothing)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"equal(): input and other must be tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.array.shape != other.array.shape:
        return False
    return bool(eq(input, other).array.all())
