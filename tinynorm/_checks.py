"""Argument checks shared by the public functions, so that one kind of mistake gets one kind of error.

* A tensor argument that is not a Tensor (a numpy array, a list, None) is a ``TypeError`` worded as
  PyTorch's: ``layer_norm(): argument 'input' must be Tensor, not numpy.ndarray``.
* A number that is not a number (a string) is a ``TypeError``; a number out of its range (a negative
  ``eps``, a ``momentum`` of 5, NaN) is a ``ValueError``. Both name the function, the argument and
  the value received.

:class:`CheckedAttribute` applies a check on every assignment of a module attribute, so that
``layer.momentum = 5`` fails where it is written rather than at the next forward pass.
"""
from __future__ import annotations

from numbers import Real
from typing import Any, Callable

import numpy as np

from .tensor import Tensor


def type_name(value: object) -> str:
    """The type of ``value`` as PyTorch's messages name it: ``list``, ``NoneType``, ``numpy.ndarray``."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def check_tensor(op: str, name: str, value: object) -> Tensor:
    """``value`` after checking it is a Tensor: ``op(): argument 'name' must be Tensor, not list``."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type_name(value)}")
    return value


def check_same_device(op: str, name: str, tensor: Tensor, device: str) -> Tensor:
    """``tensor`` after checking it is on ``device`` (the input's), as PyTorch's same-device rule."""
    if tensor.device != device:
        raise RuntimeError(f"{op}: {name} is on {tensor.device} but input is on {device}; "
                           f"move it with .to('{device}')")
    return tensor


def check_floating(op: str, name: str, tensor: Tensor) -> Tensor:
    """``tensor`` after checking its dtype is a floating-point one (float16, float32 or float64)."""
    if tensor.dtype.kind != "f":
        raise TypeError(f"{op}: expected {name} of a floating-point dtype (float16, float32 or float64), "
                        f"got {tensor.dtype}")
    return tensor


def _prefix(op: str | None) -> str:
    return f"{op}: " if op else ""


def check_number(op: str | None, name: str, value: object) -> float:
    """``value`` as a float after checking it is a real number (a bool counts as 0 or 1, as in PyTorch)."""
    if not isinstance(value, Real):
        raise TypeError(f"{_prefix(op)}{name} must be a number, got {value!r} ({type_name(value)})")
    return float(value)


def check_eps(eps: object, dtype: Any = None, *, op: str | None = None, allow_none: bool = False) -> Any:
    """``eps`` after checking it is a number >= 0 (not NaN): a float, or a scalar of ``dtype`` when given
    (None passes where it means a default, as RMSNorm's machine epsilon).

    The one rule for the ``eps`` of every normalization, module, functional and kernel. A kernel asks
    for its own dtype: a Python float would make it compile a second, float64, signature.
    """
    if eps is None and allow_none:
        return None
    if type(eps) is not float:  # the common case skips the slower abstract-class test
        check_number(op, "eps", eps)
    if not eps >= 0:
        raise ValueError(f"{_prefix(op)}eps must be a non-negative float, got {eps!r} (it is added to the variance)")
    return float(eps) if dtype is None else dtype.type(eps)


def check_momentum(momentum: object, *, op: str, allow_none: bool = False) -> float | None:
    """``momentum`` after checking it is a number in [0, 1] (or None, where a cumulative average is meant)."""
    if momentum is None and allow_none:
        return None
    value = check_number(op, "momentum", momentum)
    if not 0.0 <= value <= 1.0:
        expected = "a number in [0, 1] or None" if allow_none else "a number in [0, 1]"
        raise ValueError(f"{op}: momentum must be {expected} (the weight of the new batch), got {momentum!r}")
    return value


def check_bool(op: str, name: str, value: object) -> bool:
    """``value`` after checking it is a bool (Python's or numpy's)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a bool, got {value!r} ({type_name(value)})")
    return bool(value)


class CheckedAttribute:
    """An instance attribute that passes every assigned value through ``check(value, op=class name)``.

    ``eps = CheckedAttribute(check_eps)`` in a class body makes ``layer.eps = -1`` raise the same
    error as the constructor would; the checked value is stored under ``_eps``.
    """

    def __init__(self, check: Callable[..., Any]) -> None:
        self.check = check

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            return instance.__dict__[self.slot]
        except KeyError:
            raise AttributeError(f"{type(instance).__name__!r} object has no attribute {self.slot[1:]!r}") from None

    def __set__(self, instance: object, value: Any) -> None:
        instance.__dict__[self.slot] = self.check(value, op=type(instance).__name__)
