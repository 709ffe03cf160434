"""``tinynorm.accelerator``: the GPU, if there is one, asked for without naming its kind, as
``torch.accelerator``. PyTorch's quickstart picks its device this way::

    device = tinynorm.accelerator.current_accelerator().type if tinynorm.accelerator.is_available() else "cpu"

tinynorm's one accelerator is the CUDA device (:mod:`tinynorm.cuda`).
"""
from __future__ import annotations

from typing import Any

from . import cuda
from .devices import device


def is_available() -> bool:
    """True when a CUDA device can hold tensors (:func:`tinynorm.cuda.is_available`)."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device(type='cuda')`` when tinynorm can use a GPU, else None (``check_available`` is accepted
    for PyTorch's signature: the device is only reported when it is usable)."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many CUDA devices there are (0 without one); tinynorm uses the first."""
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the accelerator in use: always 0 (tinynorm drives one GPU)."""
    return 0


def synchronize(device: Any = None) -> None:
    """Wait until the accelerator has finished its queued work (:func:`tinynorm.cuda.synchronize`)."""
    cuda.synchronize()
