"""Bitwise and logical operations: ``& | ^ ~`` (``bitwise_and``, ...) on integer and bool tensors, and
``logical_and/or/xor/not`` of any tensors (nonzero is True). No gradients.

The operands are promoted as PyTorch does (``bool_tensor | 2`` is int64); floats are refused with
PyTorch's error.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes
from ..tensor import Tensor
from .comparison import outside_graph
from .promotion import promote


def _integral(name: str, *operands: Any) -> tuple:
    promoted = promote(*operands) if len(operands) == 2 else operands
    dtype = dtypes.result_type(*promoted)
    if dtype.kind == "f":
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dtypes.type_name(dtype)}\'')
    return promoted


def bitwise_and(input: Any, other: Any) -> Tensor:  # noqa: A002  (PyTorch's argument names)
    """``input & other``: bitwise AND of integers, logical AND of bools."""
    return outside_graph("bitwise_and", *_integral("bitwise_and", input, other))


def bitwise_or(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input | other``."""
    return outside_graph("bitwise_or", *_integral("bitwise_or", input, other))


def bitwise_xor(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input ^ other``."""
    return outside_graph("bitwise_xor", *_integral("bitwise_xor", input, other))


def bitwise_not(input: Tensor) -> Tensor:  # noqa: A002
    """``~input``: bitwise NOT of integers, logical NOT of bools."""
    return outside_graph("invert", *_integral("bitwise_not", input))


def _truth(value: Any) -> Any:
    """``value`` as bools: a bool tensor as it is, any other tensor compared with 0, a number as a bool."""
    if isinstance(value, Tensor):
        return value if value.dtype.kind == "b" else outside_graph("not_equal", value, 0)
    return bool(value)


def logical_and(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """Where both are nonzero (a bool tensor)."""
    return outside_graph("logical_and", _truth(input), _truth(other))


def logical_or(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """Where either is nonzero."""
    return outside_graph("logical_or", _truth(input), _truth(other))


def logical_xor(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """Where exactly one is nonzero."""
    return outside_graph("logical_xor", _truth(input), _truth(other))


def logical_not(input: Tensor) -> Tensor:  # noqa: A002
    """Where ``input`` is zero."""
    return outside_graph("equal", input, 0) if input.dtype.kind != "b" else outside_graph("logical_not", input)
