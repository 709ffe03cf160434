"""``tinynorm.device``: where a tensor lives, as ``torch.device``.

A device is a ``str`` whose value is tinynorm's name for it, ``'cpu'`` or ``'cuda'``, with PyTorch's
``type`` and ``index`` on top. tinynorm names devices by these strings everywhere inside (backends
are looked up by name, ops compare ``x.device != 'cpu'``), so a device object goes wherever a device
name does and costs nothing extra there: comparing or hashing it is comparing or hashing the name.
Printed, it is PyTorch's: ``str(device('cuda:0'))`` is ``'cuda:0'``, its repr
``device(type='cuda', index=0)``.

The one visible consequence of being a string: devices compare by type alone, so
``device('cuda') == device('cuda:0')`` and ``device('cpu') == 'cpu'`` are True (PyTorch: False);
tinynorm uses one GPU, so the two name the same device (docs/differences.md).
"""
from __future__ import annotations

import operator
from typing import Any

TYPES = ("cpu", "cuda")


class device(str):  # noqa: N801  (PyTorch's name)
    """``device('cpu')``, ``device('cuda')``, ``device('cuda:0')``, ``device('cuda', 0)``, ``device(0)``
    (CUDA device 0). tinynorm drives one GPU, so a CUDA index other than 0 is refused."""

    def __new__(cls, type: Any, index: Any = None) -> "device":  # noqa: A002  (PyTorch's argument name)
        if isinstance(type, device) and index is None:
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not {_type_name(type)}")
        name, colon, suffix = type.partition(":")
        if name not in TYPES:
            raise RuntimeError(f"Expected one of {', '.join(TYPES)} device type at start of device string: {type}")
        if colon:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: "
                                   f"{type}")
            if not suffix.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(suffix)
        if index is not None:
            try:
                index = operator.index(index)
            except TypeError:
                raise TypeError(f"device(): argument 'index' must be int, not {_type_name(index)}") from None
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if index != 0:
                raise ValueError(f"device {name}:{index}: tinynorm uses one device of each type, index 0")
        result = super().__new__(cls, name)
        result._index = index
        return result

    @property
    def type(self) -> str:  # noqa: A003
        """``'cpu'`` or ``'cuda'``."""
        return str.__str__(self)

    @property
    def index(self) -> int | None:
        """0 for the CUDA device of a tensor, None where no index was given (as in PyTorch)."""
        return self._index

    def __str__(self) -> str:
        return self.type if self._index is None else f"{self.type}:{self._index}"

    def __repr__(self) -> str:
        index = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self.type}'{index})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self) -> tuple:
        return device, (self.type, self._index)


def _type_name(value: Any) -> str:
    return type(value).__name__


CPU = device("cpu")
CUDA = device("cuda", 0)
_TENSOR_DEVICES = {"cpu": CPU, "cuda": CUDA}


def tensor_device(name: str) -> device:
    """The device object a tensor on ``name`` (``'cpu'`` or ``'cuda'``, already checked) reports:
    ``device(type='cpu')`` or ``device(type='cuda', index=0)``, as PyTorch's tensors do."""
    return _TENSOR_DEVICES[name]


_default = {"name": "cpu"}  # where factory functions put a tensor given no device (set_default_device)


def get_default_device() -> device:
    """The device of a new tensor made without ``device=``: the CPU unless :func:`set_default_device`
    chose another (``torch.get_default_device``)."""
    return tensor_device(_default["name"])


def default_device_name() -> str:
    return _default["name"]


def set_default_device(new: Any) -> None:
    """Make factory functions (``zeros``, ``randn``, ``tensor``, a layer's parameters ...) put tensors
    given no ``device=`` on ``new`` (None: back to the CPU), as ``torch.set_default_device``."""
    name = "cpu" if new is None else str.__str__(device(new))
    if name == "cuda":
        from . import cuda as _cuda

        _cuda.require()
    _default["name"] = name
