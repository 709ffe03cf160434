"""What an optimizer keeps per parameter, and how a saved state is checked and restored.

Each optimizer describes its per-parameter state with a *layout*: a dict from each state name to a
:class:`Slot` (``{'step': Slot.STEP, 'exp_avg': Slot.TENSOR, ...}``). ``load_state_dict`` converts
every saved value by its slot before anything is replaced, so a state from another optimizer (SGD's
``momentum_buffer`` where Adam needs ``exp_avg``), a missing buffer, a wrong shape or a fractional
step count is refused at load, naming the key, and the optimizer is left as it was.

Saved values may be tinynorm tensors, numpy arrays or anything else numpy can read as an array
(a PyTorch tensor, so a ``torch.optim`` state dict loads as it is); ``step`` may be an int or a
whole-valued float or 0-d tensor (PyTorch keeps it in a float32 tensor).
"""
from __future__ import annotations

import enum
import math
import numbers
from typing import Any

import numpy as np

from ..tensor import Tensor


class Slot(enum.Enum):
    """The kind of value one state name holds."""

    STEP = "a step count (an int >= 0)"
    NUMBER = "a finite real number"
    TENSOR = "a floating tensor of the parameter's shape"
    OPTIONAL_TENSOR = "a floating tensor of the parameter's shape, or nothing"


Layout = dict[str, Slot]


def restore_state(saved: dict[str, Any], param: Tensor, layout: Layout, where: str, owner: str) -> dict[str, Any]:
    """The state ``saved`` (from a state dict) converted for ``param``: tensors copied onto
    its device and, if floating, into its dtype; numbers as Python numbers. An empty dict is a
    parameter that was never updated. Raises ``ValueError``/``TypeError`` naming ``where[name]``."""
    # An optional buffer saved as None (older PyTorch wrote SGD's that way) is no buffer.
    saved = {name: value for name, value in saved.items()
             if not (value is None and layout.get(name) is Slot.OPTIONAL_TENSOR)}
    if not saved:
        return {}
    kept = ", ".join(repr(name) + (" (optional)" if slot is Slot.OPTIONAL_TENSOR else "")
                     for name, slot in layout.items())
    for name in saved:
        if name not in layout:
            raise ValueError(f"load_state_dict: {where} has {name!r}, which {owner} does not keep (it keeps "
                             f"{kept}): is this another optimizer's state?")
    for name, slot in layout.items():
        if name not in saved and slot is not Slot.OPTIONAL_TENSOR:
            raise ValueError(f"load_state_dict: {where} has no {name!r} ({owner} keeps {kept} per parameter, "
                             f"got {', '.join(map(repr, saved))})")
    return {name: _restore_value(value, layout[name], param, f"{where}[{name!r}]") for name, value in saved.items()}


def _restore_value(value: Any, slot: Slot, param: Tensor, where: str) -> Any:
    if slot is Slot.STEP:
        return _whole_number(value, where)
    if slot is Slot.NUMBER:
        number = _scalar(value, where, slot)
        if not math.isfinite(number):
            raise ValueError(f"load_state_dict: {where} must be {slot.value}, got {number}")
        return number
    return _tensor(value, param, where)


def _whole_number(value: Any, where: str) -> int:
    number = _scalar(value, where, Slot.STEP)
    if not (math.isfinite(number) and number >= 0 and number == int(number)):
        raise ValueError(f"load_state_dict: {where} must be {Slot.STEP.value}, got {number}")
    return int(number)


def _scalar(value: Any, where: str, slot: Slot) -> float:
    """A Python number from a number or a one-element array or tensor."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"load_state_dict: {where} must be {slot.value}, got {value!r}")
    if isinstance(value, numbers.Real):
        return value if isinstance(value, int) else float(value)
    array = _host_array(value, where, slot)
    if array.size != 1 or array.dtype.kind not in "iuf":
        raise TypeError(f"load_state_dict: {where} must be {slot.value}, got a {array.dtype} array of shape "
                        f"{array.shape}")
    return array.reshape(()).item()


def _tensor(value: Any, param: Tensor, where: str) -> Tensor:
    """A copy of ``value`` on ``param``'s device, in its dtype; refused unless floating and of its shape."""
    if not isinstance(value, Tensor):
        value = Tensor._from_array(np.array(_host_array(value, where, Slot.TENSOR)))
    if value.dtype.kind != "f":
        raise TypeError(f"load_state_dict: {where} must be {Slot.TENSOR.value}, got dtype {value.dtype}")
    if tuple(value.shape) != tuple(param.shape):
        raise ValueError(f"load_state_dict: {where} has shape {tuple(value.shape)}, but its parameter has shape "
                         f"{tuple(param.shape)}")
    return value.detach().to(dtype=param.dtype, device=param.device).clone()


def _host_array(value: Any, where: str, slot: Slot) -> np.ndarray:
    """``value`` read as a numpy array: an ndarray, or an object that offers ``__array__`` (a PyTorch
    tensor); never a list or a string, which would hide a malformed state dict."""
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, np.ndarray) or (hasattr(value, "__array__") and not isinstance(value, (str, bytes))):
        return np.asarray(value)
    raise TypeError(f"load_state_dict: {where} must be {slot.value}, got {type(value).__name__}")
