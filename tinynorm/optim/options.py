"""Checks of optimizer options, with PyTorch's messages for values out of range.

Every parameter group is checked when it is added and when a state dict is loaded, so a bad value
never waits for the next ``step()`` to surface. A value of the wrong type (a string, a tensor, a bool
where a number belongs) is a ``TypeError`` naming the option; a number out of range is PyTorch's
``ValueError``, e.g. ``Invalid learning rate: -0.1``. NaN is out of every range (PyTorch lets
``SGD(lr=nan)`` through, which silently turns every parameter into NaN).
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

ParamGroup = dict[str, Any]

_LABELS = {"lr": "learning rate", "eps": "epsilon value"}  # PyTorch's words; other options read "<name> value"


def check_options(owner: str, group: ParamGroup, numbers: tuple[str, ...], flags: tuple[str, ...],
                  betas: bool = False) -> None:
    """The usual checks of an optimizer's group: each of ``numbers`` a real >= 0, ``betas`` (if the
    optimizer has them) a pair in [0, 1), each of ``flags`` a bool, and the implementation options."""
    for name in numbers:
        check_number(owner, group, name)
    if betas:
        check_betas(owner, group)
    check_flags(owner, group, *flags)
    check_implementation(owner, group)


def check_number(owner: str, group: ParamGroup, name: str, low: float = 0.0, high: float | None = None,
                 high_included: bool = True) -> None:
    """Raise unless ``group[name]`` is a real number in ``[low, high]`` (``[low, high)`` without
    ``high_included``; no upper bound when ``high`` is None)."""
    value = _real(owner, name, group[name])
    above_high = high is not None and (value > high if high_included else value >= high)
    if math.isnan(value) or value < low or above_high:
        raise ValueError(f"Invalid {_LABELS.get(name, name + ' value')}: {group[name]}")


def check_real(owner: str, group: ParamGroup, name: str) -> None:
    """Raise unless ``group[name]`` is a finite real number (any sign: PyTorch does not bound it)."""
    value = _real(owner, name, group[name])
    if not math.isfinite(value):
        raise ValueError(f"Invalid {name} value: {group[name]}")


def check_betas(owner: str, group: ParamGroup, floats_only: bool = False) -> None:
    """Raise unless ``group['betas']`` is a pair of numbers in [0, 1). ``floats_only`` is Adam's
    extra rule: PyTorch's Adam and AdamW refuse ints such as ``betas=(0, 0.99)``."""
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"{owner}: betas must be a pair of numbers (beta1, beta2), got {betas!r}")
    for index, beta in enumerate(betas):
        value = _real(owner, f"betas[{index}]", beta)
        if math.isnan(value) or not 0.0 <= value < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
    if floats_only and not all(isinstance(beta, (float, np.floating)) for beta in betas):
        raise ValueError("betas must be either both floats or both Tensors")


def check_flags(owner: str, group: ParamGroup, *names: str) -> None:
    """Raise unless each named option is a bool (``nesterov='no'`` would otherwise count as true)."""
    for name in names:
        if not isinstance(group[name], (bool, np.bool_)):
            raise TypeError(f"{owner}: {name} must be a bool, got {group[name]!r} ({type(group[name]).__name__})")


def check_implementation(owner: str, group: ParamGroup) -> None:
    """The options that choose PyTorch's implementation: ``foreach`` and ``fused`` (None, True or False)
    are accepted and change nothing, since tinynorm has one implementation per device; ``capturable``
    (CUDA graphs) and ``differentiable`` (a step recorded by autograd) are not supported."""
    for name in ("foreach", "fused"):
        if name in group and group[name] is not None and not isinstance(group[name], (bool, np.bool_)):
            raise TypeError(f"{owner}: {name} must be None or a bool, got {group[name]!r}")
    if group.get("foreach") and group.get("fused"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    for name, reason in (("capturable", "tinynorm does not capture CUDA graphs"),
                         ("differentiable", "tinynorm's optimizer steps are not recorded by autograd")):
        if group.get(name, False) is not False:
            raise ValueError(f"{owner}: {name}={group[name]!r} is not supported ({reason}); leave it False")


def _real(owner: str, name: str, value: Any) -> float:
    """``value`` as a float, or a ``TypeError`` unless it is a real number (bools and tensors are not)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "a tensor (tensor options are not supported: pass a float)" if hasattr(value, "shape") \
            else type(value).__name__
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r} ({kind})")
    return float(value)
