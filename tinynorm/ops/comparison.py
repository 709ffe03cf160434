"""Comparisons (``<``, ``==``, ...): boolean tensors, outside the graph (they have no gradient)."""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor


def compare(name: str, a: Any, b: Any) -> Tensor:
    """Elementwise ``name`` (``'less'``, ``'equal'``, ...) of two tensors or numbers, as a bool tensor."""
    tensor = a if isinstance(a, Tensor) else b
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.device != b.device:
        raise RuntimeError(f"{name}: expected both tensors on the same device, got {a.device} and {b.device}; "
                           f"move one with .to(device) first")
    xp = tensor._backend
    left = a.array if isinstance(a, Tensor) else a
    right = b.array if isinstance(b, Tensor) else b
    return Tensor._from_array(xp.as_array(getattr(xp, name)(left, right)), tensor.device)
