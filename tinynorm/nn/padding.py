"""Padding layers, PyTorch's ``ZeroPad1d/2d/3d``, ``ConstantPad*``, ``ReflectionPad*``,
``ReplicationPad*`` and ``CircularPad*``: ``F.pad`` with the amounts fixed at construction (an int
pads every side of the last 1, 2 or 3 dims by it; a tuple lists (before, after) pairs, last dim first)."""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module


def _amounts(padding: Any, dims: int, layer: str) -> tuple[int, ...]:
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims or not all(isinstance(p, int) for p in padding):
        raise ValueError(f"{layer}: padding must be an int or a tuple of {2 * dims} ints, got {padding!r}")
    return padding


class _PadNd(Module):
    """``F.pad(input, self.padding, mode)``; subclasses set the mode and the number of padded dims."""

    mode, dims = "constant", 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self.dims, type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    dims = 3


class _Zero:
    """What makes a ``ZeroPad*`` of a ``ConstantPad*`` (as in PyTorch, a subclass of it): value 0."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_Zero, ConstantPad1d):
    pass


class ZeroPad2d(_Zero, ConstantPad2d):
    pass


class ZeroPad3d(_Zero, ConstantPad3d):
    pass


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    dims = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    dims = 3


class _CircularPadNd(_PadNd):
    mode = "circular"


class CircularPad1d(_CircularPadNd):
    dims = 1


class CircularPad2d(_CircularPadNd):
    dims = 2


class CircularPad3d(_CircularPadNd):
    dims = 3
