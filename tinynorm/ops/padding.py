"""``pad``: widen (or, with negative amounts, crop) the last dims of a tensor, as ``F.pad``.

``pad`` lists (before, after) amounts from the last dim backwards: ``(1, 2)`` pads the last dim by 1
before and 2 after, ``(1, 1, 2, 2)`` also the one before it by 2. Modes:

- ``'constant'``: new elements hold ``value`` (0 by default); built by concatenation.
- ``'reflect'``: mirror without repeating the edge (``[a b c] -> [c b | a b c | b a]``);
- ``'replicate'``: repeat the edge (``[a a | a b c | c c]``);
- ``'circular'``: wrap around (``[b c | a b c | a b]``).

The last three read each output position from an input position along each padded dim (indexing,
whose gradient adds the copies back up), and pad only the last 1 to 3 dims of a (batched) input.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..tensor import Tensor
from .shape import cat

MODES = ("constant", "reflect", "replicate", "circular")


def _amounts(pad: Sequence[int], ndim: int) -> list[tuple[int, int, int]]:
    """``(dim, before, after)`` for each dim ``pad`` names, with PyTorch's checks."""
    try:
        amounts = [operator.index(p) for p in pad]
    except TypeError:
        bad = next(p for p in pad if not isinstance(p, int))
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                        f"{type(bad).__name__}") from None
    if len(amounts) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(amounts) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(amounts)} and input of dimension {ndim}")
    return [(ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]


def _constant(x: Tensor, dim: int, before: int, after: int, value: Any) -> Tensor:
    """``x`` cropped where an amount is negative, then padded with ``value`` where it is positive."""
    size = x.shape[dim]
    if before < 0 or after < 0:
        x = x.narrow(dim, max(-before, 0), size - max(-before, 0) - max(-after, 0))
    parts = []
    for amount in (before, after):
        shape = list(x.shape)
        shape[dim] = max(amount, 0)
        parts.append(Tensor._from_array(x._backend.full(tuple(shape), value, dtype=x.dtype), x.device))
    return cat([parts[0], x, parts[1]], dim)


def _positions(mode: str, size: int, before: int, after: int) -> np.ndarray:
    """The input position each output position along a padded dim reads."""
    if mode == "circular":  # wraps the cropped dim, as PyTorch does
        start, stop = max(-before, 0), size - max(-after, 0)
        kept = np.arange(start, stop)
        return kept[np.arange(-max(before, 0), len(kept) + max(after, 0)) % len(kept)]
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    positions = np.abs(positions)  # reflect
    return np.where(positions > size - 1, 2 * (size - 1) - positions, positions)


def _check_non_constant(x: Tensor, mode: str, amounts: list[tuple[int, int, int]], value: Any) -> None:
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dims = len(amounts)
    if dims > 3 or x.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"Padding size {2 * dims} is not supported for {x.ndim}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for dim, before, after in amounts:
        size = x.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input {list(x.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """``input`` padded by the (before, after) amounts of ``pad``, last dim first (see the module docstring)."""
    if mode not in MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    amounts = _amounts(pad, input.ndim)
    if mode == "constant":
        for dim, before, after in amounts:
            if before or after:
                input = _constant(input, dim, before, after, 0 if value is None else value)
        return input
    _check_non_constant(input, mode, amounts, value)
    for dim, before, after in amounts:
        if before or after:
            index = _positions(mode, input.shape[dim], before, after)  # a host index reaches any device
            input = input[(slice(None),) * dim + (index,)]
    return input
